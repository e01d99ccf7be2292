import { createFeedService } from '../feeds/feed-service.js';
import { createProductService } from '../products/product-service.js';
import { createProductActivity } from '../recommendations/product-activity.js';
import { createRanker } from '../recommendations/rankings.js';
import type { Runtime } from '../runtime/module.js';

/** The catalog: products, the behaviour aggregates behind recommendations, and the feeds that rank them. */
export function createCatalogModule(runtime: Runtime) {
  const productActivity = createProductActivity(runtime);
  const products = createProductService({ ...runtime, categoriesChanged: productActivity.categoriesChanged });
  const feeds = createFeedService({ ...runtime, products, ranker: createRanker({ ...runtime, activity: productActivity }) });
  return { productActivity, products, feeds };
}
