import { Command } from 'commander';
import { UsageError, ValidationError } from '../../../domain/errors.js';
import type { FeedReply } from '../../../domain/feeds/feed-service.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { describeFeed } from './format.js';

interface CreateOptions extends GlobalOptions {
  name: string;
  recommendationType?: string;
  sortBy?: string;
  maxItems?: string;
  categories?: string;
  excludeCategories?: string;
  categoriesOp?: string;
  excludeCategoriesOp?: string;
  priceMin?: string;
  priceMax?: string;
  stockMin?: string;
  stockMax?: string;
  stockStatus?: string;
  source?: string;
  metadata?: string;
  variantOptions?: string;
  variantInStock?: boolean;
}

const number = (flag: string, value: string): number => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${flag} must be a number (got ${value})`);
  return n;
};

const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

const json = (flag: string, value: string): unknown => {
  try {
    return JSON.parse(value);
  } catch {
    throw new UsageError(`${flag} must be JSON`);
  }
};

/** The feed body the flags describe: only what was given (the API's defaults apply to the rest). */
export function feedBodyFromOptions(options: CreateOptions): Record<string, unknown> {
  const body: Record<string, unknown> = { name: options.name };
  if (options.recommendationType !== undefined) body.recommendation_type = options.recommendationType;
  if (options.sortBy !== undefined) body.sort_by = options.sortBy;
  if (options.maxItems !== undefined) body.max_items = number('--max-items', options.maxItems);
  if (options.categories !== undefined) body.categories = list(options.categories);
  if (options.excludeCategories !== undefined) body.exclude_categories = list(options.excludeCategories);
  if (options.categoriesOp !== undefined) body.categories_op = options.categoriesOp;
  if (options.excludeCategoriesOp !== undefined) body.exclude_categories_op = options.excludeCategoriesOp;
  if (options.priceMin !== undefined) body.price_min = number('--price-min', options.priceMin);
  if (options.priceMax !== undefined) body.price_max = number('--price-max', options.priceMax);
  if (options.stockMin !== undefined) body.stock_min = number('--stock-min', options.stockMin);
  if (options.stockMax !== undefined) body.stock_max = number('--stock-max', options.stockMax);
  if (options.stockStatus !== undefined) body.stock_status = options.stockStatus;
  if (options.source !== undefined) body.source = options.source;
  if (options.metadata !== undefined) body.metadata = json('--metadata', options.metadata);
  if (options.variantOptions !== undefined) body.variant_options = json('--variant-options', options.variantOptions);
  if (options.variantInStock) body.variant_in_stock = true;
  return body;
}

export function feedsCreateCommand(): Command {
  return withGlobalOptions(
    new Command('create')
      .description('create a saved product feed (options mirror the feed fields of POST /api/v1/product-feeds)')
      .requiredOption('--name <name>', 'feed name')
      .option('--recommendation-type <type>', 'best_selling, most_viewed, best_selling_and_most_viewed, newest, random, recently_viewed, added_to_cart, may_also_like (default: none, a plain sort)')
      .option('--sort-by <sort>', 'newest (default), price_asc, price_desc, title_asc')
      .option('--max-items <n>', '1 to 100 (default 10)')
      .option('--categories <a,b>', 'only products in these categories')
      .option('--exclude-categories <a,b>', 'leave out products in these categories')
      .option('--categories-op <op>', 'any (default) or all')
      .option('--exclude-categories-op <op>', 'any (default) or all')
      .option('--price-min <x>', 'lowest price')
      .option('--price-max <x>', 'highest price')
      .option('--stock-min <n>', 'lowest stock quantity (unknown quantities are left out)')
      .option('--stock-max <n>', 'highest stock quantity (unknown quantities are left out)')
      .option('--stock-status <status>', 'in_stock or out_of_stock')
      .option('--source <platform:shop_domain>', 'only products from this integration')
      .option('--metadata <json>', 'JSON array of {"key","operator","value"} conditions')
      .option('--variant-options <json>', 'JSON object: axis to array of accepted values')
      .option('--variant-in-stock', 'the matching variant must be in stock'),
  ).action((options: CreateOptions) =>
    runCommand(
      options,
      async (context): Promise<FeedReply> => {
        const body = feedBodyFromOptions(options);
        const services = await context.services();
        const workspace = await context.workspace();
        try {
          return await services.feeds.create(workspace.id, body);
        } catch (error) {
          // A value the feed cannot use came from a flag: a usage error.
          if (error instanceof ValidationError) throw new UsageError(error.message);
          throw error;
        }
      },
      describeFeed,
    ),
  );
}
