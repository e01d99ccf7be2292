import type { Knex } from 'knex';

/**
 * `contact_identities` (docs/platforms/README.md, Orders without an email): the contact a shop platform's customer
 * id (`shopify`, `woocommerce`) or a phone number (`phone`, normalised) names in a workspace, one contact per
 * identity: the contact last written with it. An order without an email finds its contact here. The identities of
 * the contacts stored so far are read from their properties, a page at a time; where two contacts share one, the
 * newer contact holds it.
 */

/** Frozen copies of src/domain/contact-identities/contact-identity.ts (a migration imports no live code). */
const CUSTOMER_ID_PROPERTIES = [
  ['shopify', 'shopify_customer_id'],
  ['woocommerce', 'woocommerce_customer_id'],
] as const;

function phoneKey(value: unknown): string | null {
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  const text = String(value).trim();
  const international = /^(\+|00)/.test(text);
  let digits = text.replace(/\D/g, '');
  if (text.startsWith('00')) digits = digits.slice(2);
  if (digits.length < 7 || digits.length > 15) return null;
  return international ? `+${digits}` : digits;
}

function identitiesOf(properties: Record<string, unknown>): Array<{ kind: string; value: string }> {
  const found: Array<{ kind: string; value: string }> = [];
  for (const [kind, property] of CUSTOMER_ID_PROPERTIES) {
    const id = properties[property];
    const value = typeof id === 'number' && Number.isInteger(id) ? String(id) : typeof id === 'string' ? id.trim() : '';
    if (value !== '' && value.length <= 255) found.push({ kind, value });
  }
  const phone = phoneKey(properties.phone);
  if (phone !== null) found.push({ kind: 'phone', value: phone });
  return found;
}

const PAGE = 1_000;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('contact_identities', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('kind', 16).notNullable();
    t.string('value', 255).notNullable();
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.primary(['workspace_id', 'kind', 'value']);
    t.index(['contact_id']);
  });

  for (let after = ''; ; ) {
    const contacts: Array<{ id: string; workspace_id: string; properties: unknown }> = await knex('contacts')
      .whereNull('erased_at')
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)
      .select('id', 'workspace_id', 'properties');
    if (contacts.length === 0) break;
    const rows = new Map<string, { workspace_id: string; kind: string; value: string; contact_id: string }>();
    for (const contact of contacts) {
      const properties = typeof contact.properties === 'string' ? JSON.parse(contact.properties) : contact.properties;
      if (properties === null || typeof properties !== 'object') continue;
      for (const { kind, value } of identitiesOf(properties as Record<string, unknown>)) {
        rows.set(`${contact.workspace_id}\u0000${kind}\u0000${value}`, { workspace_id: contact.workspace_id, kind, value, contact_id: contact.id });
      }
    }
    // Ids grow with creation (UUIDv7): a later page's contact is newer and takes an identity over.
    for (let i = 0, list = [...rows.values()]; i < list.length; i += 200) {
      await knex('contact_identities').insert(list.slice(i, i + 200)).onConflict(['workspace_id', 'kind', 'value']).merge(['contact_id']);
    }
    after = contacts[contacts.length - 1]!.id;
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('contact_identities');
}
