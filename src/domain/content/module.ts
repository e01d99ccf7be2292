import type { FeedService } from '../feeds/feed-service.js';
import { createBlockProductSource } from '../templates/product-block-source.js';
import { createTemplates, type TemplateLimits } from '../templates/template-engine.js';

/**
 * Content: the Liquid templates every message and footer renders with (their product blocks rank the catalog's
 * feeds), built before accounts so settings can check footer templates when they are saved.
 */
export function createContentModule(deps: { feeds: FeedService; templateLimits: TemplateLimits | undefined }) {
  const templates = createTemplates({ blockProducts: createBlockProductSource({ feeds: deps.feeds }), limits: deps.templateLimits });
  return { templates };
}
