import { Command } from 'commander';
import { productsImportCommand } from './import.js';

/** `emk products <verb>`: the product catalog. */
export function productsCommand(): Command {
  return new Command('products')
    .description('the product catalog')
    .addCommand(productsImportCommand().exitOverride());
}
