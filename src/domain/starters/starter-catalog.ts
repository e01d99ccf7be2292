/**
 * The starters (docs/flows.md, Starters): ready flows and campaign templates, each email a responsive MJML
 * template. A starter is plain data: what it creates besides itself (a product feed for its product block, a
 * segment for its trigger) is named here and made by the starter service, which puts the new ids in place of
 * `__FEED__` and `__SEGMENT__`.
 */

export type StarterKind = 'flow' | 'campaign';

export interface StarterEmail {
  type: 'email';
  subject: string;
  format: 'mjml';
  html: string;
}
export type StarterStep = StarterEmail | { type: 'delay'; minutes: number };

interface StarterBase {
  id: string;
  name: string;
  description: string;
  /** A feed made for the starter's product blocks (`__FEED__`). */
  feed?: { name: string; recommendation_type: string; max_items: number };
  /** A segment made for the starter's trigger (`__SEGMENT__`). */
  segment?: { name: string; conditions: Record<string, unknown> };
}

export interface FlowStarter extends StarterBase {
  kind: 'flow';
  trigger: Record<string, unknown>;
  message_type: 'marketing' | 'transactional';
  reentry: 'always' | 'once';
  steps: StarterStep[];
}

export interface CampaignStarter extends StarterBase {
  kind: 'campaign';
  subject: string;
  html: string;
}

export type Starter = FlowStarter | CampaignStarter;

const DAY = 1_440;

/** The frame of every starter email: the shop's name, the body's sections, and (marketing) the consent links. */
const frame = (preview: string, sections: string, marketing = true) => `<mjml>
  <mj-head>
    <mj-preview>${preview}</mj-preview>
    <mj-attributes>
      <mj-all font-family="Helvetica, Arial, sans-serif" />
      <mj-text font-size="15px" line-height="22px" color="#1f2937" />
      <mj-button background-color="#111827" color="#ffffff" border-radius="6px" font-size="15px" />
    </mj-attributes>
  </mj-head>
  <mj-body background-color="#f3f4f6">
    <mj-section background-color="#ffffff" padding-bottom="0">
      <mj-column><mj-text font-size="20px" font-weight="bold">{{ workspace.name }}</mj-text></mj-column>
    </mj-section>
${sections}
    <mj-section>
      <mj-column>
        <mj-text font-size="12px" line-height="18px" color="#6b7280" align="center">{{ workspace.name }}${
          marketing ? '<br /><a href="{{ unsubscribe_url }}" style="color:#6b7280">Unsubscribe</a> · <a href="{{ preferences_url }}" style="color:#6b7280">Manage preferences</a>' : ''
        }</mj-text>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`;

const text = (html: string) => `    <mj-section background-color="#ffffff"><mj-column><mj-text>${html}</mj-text></mj-column></mj-section>`;

const button = (label: string, href: string) =>
  `    <mj-section background-color="#ffffff"><mj-column><mj-button href="${href}">${label}</mj-button></mj-column></mj-section>`;

/** The product grid of docs/email.md: two columns on a wide screen, one on a phone. */
const productGrid = (heading: string, limit = 4, fallback = 'best_selling') => `    <mj-section background-color="#ffffff" padding-bottom="0"><mj-column><mj-text font-weight="bold">${heading}</mj-text></mj-column></mj-section>
    <mj-section background-color="#ffffff">
      <mj-raw>{% products feed: "__FEED__", limit: ${limit}, fallback: "${fallback}" %}</mj-raw>
      <mj-column width="50%">
        <mj-image src="{{ item.image_url }}" href="{{ item.url }}" alt="{{ item.title }}" width="240px" />
        <mj-text align="center"><a href="{{ item.url }}" style="color:#111827">{{ item.title }}</a><br />{{ item.price }} {{ item.currency }}</mj-text>
      </mj-column>
      <mj-raw>{% endproducts %}</mj-raw>
    </mj-section>`;

/** Rows of a list of items (a cart's or an order's): title, quantity, price. */
const itemTable = (list: 'cart.items' | 'order.items') => `    <mj-section background-color="#ffffff">
      <mj-column>
        <mj-table>
          <tr style="border-bottom:1px solid #e5e7eb;text-align:left"><th>Item</th><th>Qty</th><th>Price</th></tr>
          {% for item in ${list} %}<tr><td>{{ item.title }}</td><td>{{ item.quantity | default: 1 }}</td><td>{{ item.price }}</td></tr>{% endfor %}
        </mj-table>
      </mj-column>
    </mj-section>`;

const hello = 'Hi {{ contact.first_name | default: "there" }},';

export const STARTERS: Starter[] = [
  {
    id: 'welcome_series',
    kind: 'flow',
    name: 'Welcome series',
    description: 'Three emails over a week to a new subscriber (the `subscribed` event): a welcome, the best sellers, a reminder.',
    trigger: { type: 'event', event_name: 'subscribed' },
    message_type: 'marketing',
    reentry: 'once',
    feed: { name: 'Welcome: best sellers', recommendation_type: 'best_selling', max_items: 8 },
    steps: [
      { type: 'email', format: 'mjml', subject: 'Welcome to {{ workspace.name }}', html: frame('Glad you are here', [text(`${hello}<br />thanks for joining {{ workspace.name }}. Here is what is new.`), productGrid('New and popular')].join('\n')) },
      { type: 'delay', minutes: 2 * DAY },
      { type: 'email', format: 'mjml', subject: 'Our best sellers', html: frame('What everyone is buying', [text(`${hello}<br />these are the favourites of our customers.`), productGrid('Best sellers')].join('\n')) },
      { type: 'delay', minutes: 5 * DAY },
      { type: 'email', format: 'mjml', subject: 'Anything we can help with?', html: frame('We are here to help', text(`${hello}<br />reply to this email if you have a question: a person reads it.`)) },
    ],
  },
  {
    id: 'abandoned_cart',
    kind: 'flow',
    name: 'Abandoned cart',
    description: 'An hour after a cart goes quiet: the cart’s items and a way back to checkout, and a reminder a day later.',
    trigger: { type: 'abandoned_cart', delay_minutes: 60 },
    message_type: 'marketing',
    reentry: 'always',
    steps: [
      {
        type: 'email',
        format: 'mjml',
        subject: 'You left something in your cart',
        html: frame('Your cart is waiting', [text(`${hello}<br />your cart is saved. Here is what is in it:`), itemTable('cart.items'), button('Back to my cart', '{{ cart.checkout_url }}')].join('\n')),
      },
      { type: 'delay', minutes: DAY },
      {
        type: 'email',
        format: 'mjml',
        subject: 'Still thinking it over?',
        html: frame('Your cart is still here', [text(`${hello}<br />the items in your cart are still available.`), itemTable('cart.items'), button('Complete my order', '{{ cart.checkout_url }}')].join('\n')),
      },
    ],
  },
  {
    id: 'browse_abandonment',
    kind: 'flow',
    name: 'Browse abandonment',
    description: 'A viewed product with no add-to-cart or order within two hours: the products they looked at.',
    trigger: { type: 'browse_abandonment', delay_minutes: 120 },
    message_type: 'marketing',
    reentry: 'always',
    feed: { name: 'Browse abandonment: recently viewed', recommendation_type: 'recently_viewed', max_items: 8 },
    steps: [
      { type: 'email', format: 'mjml', subject: 'Still looking?', html: frame('The products you looked at', [text(`${hello}<br />you were looking at these. They are still here.`), productGrid('Recently viewed', 4, 'most_viewed')].join('\n')) },
    ],
  },
  {
    id: 'post_purchase_cross_sell',
    kind: 'flow',
    name: 'Post-purchase cross-sell',
    description: 'Five days after an order: thanks, and products that go with what they bought (a may_also_like block).',
    trigger: { type: 'order_placed' },
    message_type: 'marketing',
    reentry: 'always',
    feed: { name: 'Cross-sell: you may also like', recommendation_type: 'may_also_like', max_items: 8 },
    steps: [
      { type: 'delay', minutes: 5 * DAY },
      {
        type: 'email',
        format: 'mjml',
        subject: 'Goes well with your order',
        html: frame('Picked for you', [text(`${hello}<br />thanks again for order {{ order.id }}. Customers who bought it also liked these.`), productGrid('You may also like', 4, 'cart_or_order_items')].join('\n')),
      },
    ],
  },
  {
    id: 'win_back',
    kind: 'flow',
    name: 'Win-back',
    description: 'Customers with no order in 90 days (a segment the starter creates; its hourly refresh moves them in): we miss you, and what is new.',
    trigger: { type: 'segment_entered', segment_id: '__SEGMENT__' },
    segment: {
      name: 'Win-back: no order in 90 days',
      conditions: { all: [{ orders: { count: { gte: 1 } } }, { orders: { count: { lte: 0 } }, within_days: 90 }] },
    },
    message_type: 'marketing',
    reentry: 'once',
    feed: { name: 'Win-back: new arrivals', recommendation_type: 'newest', max_items: 8 },
    steps: [
      { type: 'email', format: 'mjml', subject: 'We miss you, {{ contact.first_name | default: "friend" }}', html: frame('It has been a while', [text(`${hello}<br />it has been a while. Here is what is new since your last visit.`), productGrid('New arrivals')].join('\n')) },
      { type: 'delay', minutes: 7 * DAY },
      { type: 'email', format: 'mjml', subject: 'Still here for you', html: frame('Come back and see', [text(`${hello}<br />our best sellers, in case you missed them.`), productGrid('New arrivals')].join('\n')) },
    ],
  },
  {
    id: 'shipping_updates',
    kind: 'flow',
    name: 'Shipping updates',
    description: 'A transactional email each time an order’s shipping information arrives, with the order’s items.',
    trigger: { type: 'shipping_information', source_filter: 'all' },
    message_type: 'transactional',
    reentry: 'always',
    steps: [
      {
        type: 'email',
        format: 'mjml',
        subject: 'Your order {{ order.id }} is on its way',
        html: frame('Shipping update', [text(`${hello}<br />good news: order {{ order.id }} has shipped ({{ order.status }}).`), itemTable('order.items')].join('\n'), false),
      },
    ],
  },
  {
    id: 'newsletter',
    kind: 'campaign',
    name: 'Newsletter',
    description: 'A story, a call to action and a grid of best sellers.',
    feed: { name: 'Newsletter: best sellers', recommendation_type: 'best_selling', max_items: 8 },
    subject: 'News from {{ workspace.name }}',
    html: frame('What is new this month', [text(`${hello}<br />here is what happened at {{ workspace.name }} this month.`), button('Read more', 'https://example.com/blog'), productGrid('Best sellers')].join('\n')),
  },
  {
    id: 'product_launch',
    kind: 'campaign',
    name: 'Product launch',
    description: 'A hero image and a button for a new product, then the newest products.',
    feed: { name: 'Product launch: newest', recommendation_type: 'newest', max_items: 8 },
    subject: 'New at {{ workspace.name }}',
    html: frame(
      'Just launched',
      [
        '    <mj-section background-color="#ffffff"><mj-column><mj-image src="https://example.com/launch.jpg" alt="Our new product" href="https://example.com/new" /></mj-column></mj-section>',
        text(`${hello}<br />it is here. Be the first to try it.`),
        button('Shop now', 'https://example.com/new'),
        productGrid('Also new'),
      ].join('\n'),
    ),
  },
];

/** What GET /api/v1/starters and `emk starters list` show of each starter. */
export const starterList = () => STARTERS.map(({ id, kind, name, description }) => ({ id, kind, name, description }));
