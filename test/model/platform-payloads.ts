import type { Platform, PlatformOperation, PlatformOrderSnapshot, PlatformRefund, Presentment, ShopifyConsent } from './operations.js';
import { PLATFORM_DOMAINS, emailKey } from './reference-model.js';

/**
 * The bodies and headers Shopify (Admin API 2025-01 webhooks) and WooCommerce (REST API v3 webhooks) send for the
 * model's platform operations, shaped like their documented payloads: the fields emk reads, and the ones around them
 * a mapper must not read instead (`current_total_price`, local `date_created`, variant ids, failed transactions).
 */

/** The shops' time zones: Shopify's times carry the offset; WooCommerce's `date_*` are local, `date_*_gmt` UTC. */
const SHOPIFY_OFFSET_MS = -5 * 3_600_000;
const WOO_OFFSET_MS = 2 * 3_600_000;
const money = (cents: number) => (cents / 100).toFixed(2);
const shopifyTime = (ms: number) => `${new Date(ms + SHOPIFY_OFFSET_MS).toISOString().slice(0, 19)}-05:00`;
const wooLocal = (ms: number) => new Date(ms + WOO_OFFSET_MS).toISOString().slice(0, 19);
const wooGmt = (ms: number) => new Date(ms).toISOString().slice(0, 19);
const SHOPIFY_PRODUCTS = [632910392, 921728736, 1071559582];
const WOO_PRODUCTS = [93, 94, 799];

export interface Delivery {
  platform: Platform;
  topic: string;
  /** Platform headers, without the signature (the driver signs the exact bytes). */
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** Cents as the buyer paid them: the shop's at the order's rate (the generator keeps them whole). */
const asPaid = (cents: number, presentment: Presentment | null) => (presentment === null ? cents : Math.round(cents * presentment.rate));

/**
 * Builds deliveries; `at` turns model time into epoch ms. Customer ids are the shop's, one per address; phone
 * numbers one per address (the same at both shops), written internationally.
 */
export class PlatformPayloads {
  private readonly customerIds = new Map<string, number>();
  private readonly phones = new Map<string, string>();

  constructor(private readonly at: (modelMs: number) => number) {}

  delivery(op: PlatformOperation, now: number): Delivery {
    switch (op.kind) {
      case 'platform-order':
        return op.platform === 'shopify'
          ? this.shopify(op.topic, op.deliveryId, now, this.shopifyOrder(op.email, op.order))
          : this.woo(op.topic, op.deliveryId, now, this.wooOrder(op.email, op.order));
      case 'platform-refund':
        return this.shopify('refunds/create', op.deliveryId, now, this.shopifyRefund(Number(op.orderId), op.refund, now, op.presentment));
      case 'platform-order-deleted':
        return this.woo('order.deleted', op.deliveryId, now, { id: Number(op.orderId) });
      case 'platform-customer':
        return op.platform === 'shopify'
          ? this.shopify(op.topic, op.deliveryId, now, this.shopifyCustomer(op.email, op.consent!, now))
          : this.woo(op.topic, op.deliveryId, now, this.wooCustomer(op.email, now));
    }
  }

  private phone(email: string): string {
    const k = emailKey(email);
    if (!this.phones.has(k)) this.phones.set(k, `+1 617 555 ${String(this.phones.size + 1).padStart(4, '0')}`);
    return this.phones.get(k)!;
  }

  private customerId(platform: Platform, email: string): number {
    const key = `${platform}|${emailKey(email)}`;
    if (!this.customerIds.has(key)) this.customerIds.set(key, (platform === 'shopify' ? 7_210_000_000 : 40) + this.customerIds.size);
    return this.customerIds.get(key)!;
  }

  private shopify(topic: string, deliveryId: string | null, now: number, body: Record<string, unknown>): Delivery {
    return {
      platform: 'shopify',
      topic,
      headers: {
        'x-shopify-topic': topic,
        'x-shopify-shop-domain': PLATFORM_DOMAINS.shopify,
        'x-shopify-api-version': '2025-01',
        'x-shopify-triggered-at': new Date(now).toISOString(),
        ...(deliveryId !== null ? { 'x-shopify-webhook-id': deliveryId, 'x-shopify-event-id': `e${deliveryId.slice(-12)}` } : {}),
      },
      body,
    };
  }

  private woo(topic: string, deliveryId: string | null, now: number, body: Record<string, unknown>): Delivery {
    const [resource, event] = topic.split('.');
    return {
      platform: 'woocommerce',
      topic,
      headers: {
        'user-agent': 'WooCommerce/9.4.2 Hookshot (WordPress/6.7.1)',
        'x-wc-webhook-source': `https://${PLATFORM_DOMAINS.woocommerce}/`,
        'x-wc-webhook-topic': topic,
        'x-wc-webhook-resource': resource!,
        'x-wc-webhook-event': event!,
        'x-wc-webhook-id': '12',
        ...(deliveryId !== null ? { 'x-wc-webhook-delivery-id': deliveryId } : {}),
      },
      body: { ...body, ...(topic === 'order.deleted' ? {} : { date_sent: wooGmt(now) }) },
    };
  }

  /** The price split into line items (with shipping on top): a mapper must take `total_price`, not add these up. */
  private lines(total: number): { items: number[]; shipping: number } {
    const shipping = total > 1_000 ? 500 : 0;
    const subtotal = total - shipping;
    return { items: subtotal >= 200 ? [Math.floor(subtotal / 2), subtotal - Math.floor(subtotal / 2)] : [subtotal], shipping };
  }

  private shopifyConsent(consent: ShopifyConsent) {
    return { state: consent.state, opt_in_level: 'single_opt_in', consent_updated_at: consent.at === null ? null : shopifyTime(this.at(consent.at)) };
  }

  private shopifyCustomerObject(email: string, consent: ShopifyConsent, now: number) {
    const id = this.customerId('shopify', email);
    // Older API versions also sent `accepts_marketing`, agreeing with the consent (and timed alike).
    const older = consent.at !== null && id % 2 === 0;
    return {
      id,
      email,
      created_at: shopifyTime(now - 86_400_000),
      updated_at: shopifyTime(now),
      first_name: 'Model',
      last_name: `Buyer ${id % 1000}`,
      state: 'enabled',
      note: null,
      verified_email: true,
      multipass_identifier: null,
      tax_exempt: false,
      phone: this.phone(email),
      ...(older ? { accepts_marketing: consent.state === 'subscribed', accepts_marketing_updated_at: shopifyTime(this.at(consent.at!)) } : {}),
      email_marketing_consent: this.shopifyConsent(consent),
      sms_marketing_consent: null,
      tags: '',
      currency: 'USD',
      tax_exemptions: [],
      admin_graphql_api_id: `gid://shopify/Customer/${id}`,
      default_address: null,
    };
  }

  /** A refund transaction, in the currency the buyer paid. */
  private shopifyTransaction(orderId: number, refundId: string, n: number, amount: number, status: 'success' | 'failure', at: string, presentment: Presentment | null) {
    const id = Number(refundId) * 10 + n;
    return {
      id,
      order_id: orderId,
      kind: 'refund',
      gateway: 'bogus',
      status,
      message: status === 'success' ? 'Bogus Gateway: Forced success' : 'Bogus Gateway: Forced failure',
      created_at: at,
      test: true,
      authorization: null,
      parent_id: orderId + 1,
      processed_at: at,
      error_code: status === 'success' ? null : 'card_declined',
      source_name: 'web',
      amount: money(asPaid(amount, presentment)),
      currency: presentment?.currency ?? 'USD',
      admin_graphql_api_id: `gid://shopify/OrderTransaction/${id}`,
    };
  }

  private shopifyRefund(orderId: number, refund: PlatformRefund, at: number, presentment: Presentment | null) {
    const time = shopifyTime(at);
    return {
      id: Number(refund.id),
      order_id: orderId,
      created_at: time,
      note: 'Customer return',
      user_id: null,
      processed_at: time,
      restock: false,
      duties: [],
      admin_graphql_api_id: `gid://shopify/Refund/${refund.id}`,
      refund_line_items: [],
      transactions: [
        ...refund.amounts.map((amount, n) => this.shopifyTransaction(orderId, refund.id, n, amount, 'success', time, presentment)),
        ...(refund.failed ?? []).map((amount, n) => this.shopifyTransaction(orderId, refund.id, 5 + n, amount, 'failure', time, presentment)),
      ],
      order_adjustments: [],
    };
  }

  /**
   * An order without an email names its buyer by its customer's id and phone (a `customer` without an email), else
   * by the order's `phone`.
   */
  private shopifyBuyer(email: string | null, o: PlatformOrderSnapshot, updated: number) {
    const buyer = o.buyer;
    if (email !== null || buyer === null) return { customer: o.customer === null ? null : this.shopifyCustomerObject(email ?? '', o.customer.consent, updated), phone: null };
    const phone = buyer.phoneOf === null ? null : this.phone(buyer.phoneOf);
    if (buyer.customerOf === null) return { customer: null, phone };
    const customer = this.shopifyCustomerObject(buyer.customerOf, { state: 'not_subscribed', at: null }, updated);
    return { customer: { ...customer, email: null, phone }, phone: null };
  }

  private shopifyOrder(email: string | null, o: PlatformOrderSnapshot) {
    const id = Number(o.id);
    const { items, shipping } = this.lines(o.total);
    const refundedCents = o.refunds.flatMap((r) => r.amounts).reduce((a, b) => a + b, 0);
    const paidIn = o.presentment?.currency ?? o.currency;
    const set = (cents: number) => ({ shop_money: { amount: money(cents), currency_code: o.currency }, presentment_money: { amount: money(asPaid(cents, o.presentment)), currency_code: paidIn } });
    const updated = this.at(o.updatedAt);
    const buyer = this.shopifyBuyer(email, o, updated);
    return {
      id,
      admin_graphql_api_id: `gid://shopify/Order/${id}`,
      app_id: 580111,
      browser_ip: '203.0.113.9',
      buyer_accepts_marketing: o.buyerAcceptsMarketing,
      cancel_reason: o.cancelledAt === null ? null : 'customer',
      cancelled_at: o.cancelledAt === null ? null : shopifyTime(this.at(o.cancelledAt)),
      cart_token: null,
      checkout_id: id + 7,
      checkout_token: `c${id.toString(16)}`,
      closed_at: null,
      confirmation_number: `M${id % 100_000_000}`,
      confirmed: true,
      contact_email: o.customer?.emailOnlyThere ? null : email,
      phone: buyer.phone,
      created_at: shopifyTime(this.at(o.createdAt)),
      currency: o.currency,
      current_total_price: money(Math.max(0, o.total - refundedCents)),
      current_total_price_set: set(Math.max(0, o.total - refundedCents)),
      email: o.customer?.emailOnlyThere ? null : email,
      financial_status: o.status,
      fulfillment_status: null,
      name: o.number,
      note: null,
      note_attributes: [],
      number: Number(o.number.slice(1)) - 1000,
      order_number: Number(o.number.slice(1)),
      presentment_currency: paidIn,
      processed_at: shopifyTime(this.at(o.createdAt)),
      source_name: 'web',
      subtotal_price: money(o.total - shipping),
      tags: '',
      taxes_included: false,
      test: false,
      total_discounts: '0.00',
      total_line_items_price: money(o.total - shipping),
      total_price: money(o.total),
      total_price_set: set(o.total),
      total_shipping_price_set: set(shipping),
      total_tax: '0.00',
      updated_at: shopifyTime(updated),
      user_id: null,
      customer: buyer.customer,
      line_items: items.map((price, n) => ({
        id: id * 10 + n,
        admin_graphql_api_id: `gid://shopify/LineItem/${id * 10 + n}`,
        fulfillable_quantity: 1,
        fulfillment_service: 'manual',
        fulfillment_status: null,
        gift_card: false,
        grams: 200,
        name: `Model product ${n + 1} - Default`,
        price: money(price),
        price_set: set(price),
        product_exists: true,
        product_id: SHOPIFY_PRODUCTS[n % SHOPIFY_PRODUCTS.length],
        properties: [],
        quantity: 1,
        requires_shipping: true,
        sku: `MODEL-${n + 1}`,
        taxable: true,
        title: `Model product ${n + 1}`,
        total_discount: '0.00',
        variant_id: 808950810 + n,
        variant_title: 'Default',
        vendor: 'Model',
      })),
      shipping_lines: shipping > 0 ? [{ id: id + 3, code: 'Standard', price: money(shipping), title: 'Standard' }] : [],
      refunds: o.refunds.map((r) => this.shopifyRefund(id, r, updated, o.presentment)),
    };
  }

  private shopifyCustomer(email: string, consent: ShopifyConsent, now: number) {
    return { ...this.shopifyCustomerObject(email, consent, now), orders_count: 0, total_spent: '0.00', last_order_id: null, last_order_name: null, addresses: [] };
  }

  /** A billing address (with the buyer's email and phone) or a shipping one (with neither). */
  private address(contact: { email: string; phone: string } | null) {
    return {
      first_name: 'Model',
      last_name: 'Buyer',
      company: '',
      address_1: '969 Market',
      address_2: '',
      city: 'San Francisco',
      state: 'CA',
      postcode: '94103',
      country: 'US',
      ...(contact ?? {}),
    };
  }

  /**
   * A WooPayments multi-currency order is in the currency paid, its meta naming the store's and the rate; an order
   * without an email names its account (`customer_id`, 0: a guest) and billing phone.
   */
  private wooOrder(email: string | null, o: PlatformOrderSnapshot) {
    const id = Number(o.id);
    const { items, shipping } = this.lines(asPaid(o.total, o.presentment));
    const inPaid = (cents: number) => money(asPaid(cents, o.presentment));
    const buyer = o.buyer;
    const customerOf = email ?? buyer?.customerOf ?? null;
    const billing = email !== null ? { email, phone: this.phone(email) } : { email: '', phone: buyer?.phoneOf ? this.phone(buyer.phoneOf) : '' };
    const created = this.at(o.createdAt);
    const modified = this.at(o.updatedAt);
    const paid = ['processing', 'completed', 'refunded'].includes(o.status);
    return {
      id,
      parent_id: 0,
      status: o.status,
      currency: o.presentment?.currency ?? o.currency,
      version: '9.4.2',
      prices_include_tax: false,
      date_created: wooLocal(created),
      date_modified: wooLocal(modified),
      discount_total: '0.00',
      discount_tax: '0.00',
      shipping_total: money(shipping),
      shipping_tax: '0.00',
      cart_tax: '0.00',
      total: inPaid(o.total),
      total_tax: '0.00',
      customer_id: customerOf === null ? 0 : this.customerId('woocommerce', customerOf),
      order_key: `wc_order_${id.toString(36)}`,
      billing: this.address(billing),
      shipping: this.address(null),
      payment_method: 'bacs',
      payment_method_title: 'Direct bank transfer',
      transaction_id: '',
      customer_ip_address: '203.0.113.9',
      customer_user_agent: 'Mozilla/5.0',
      created_via: 'checkout',
      customer_note: '',
      date_completed: o.status === 'completed' ? wooLocal(modified) : null,
      date_paid: paid ? wooLocal(created) : null,
      cart_hash: `h${id}`,
      number: o.number,
      meta_data: o.presentment === null ? [] : [
        { id: id * 10 + 1, key: '_wcpay_multi_currency_order_default_currency', value: o.currency },
        { id: id * 10 + 2, key: '_wcpay_multi_currency_order_exchange_rate', value: String(o.presentment.rate) },
      ],
      line_items: items.map((price, n) => ({
        id: id * 10 + n,
        name: `Model product ${n + 1}`,
        product_id: WOO_PRODUCTS[n % WOO_PRODUCTS.length],
        variation_id: n === 0 ? 0 : 820 + n,
        quantity: 1,
        tax_class: '',
        subtotal: money(price),
        subtotal_tax: '0.00',
        total: money(price),
        total_tax: '0.00',
        taxes: [],
        meta_data: [],
        sku: `WOO-${n + 1}`,
        price: price / 100,
        parent_name: null,
      })),
      tax_lines: [],
      shipping_lines: shipping > 0 ? [{ id: id * 10 + 9, method_title: 'Flat rate', method_id: 'flat_rate', total: money(shipping), total_tax: '0.00', taxes: [] }] : [],
      fee_lines: [],
      coupon_lines: [],
      refunds: o.refunds.map((r) => ({ id: Number(r.id), reason: '', total: `-${inPaid(r.amounts.reduce((a, b) => a + b, 0))}` })),
      payment_url: `https://${PLATFORM_DOMAINS.woocommerce}/checkout/order-pay/${id}/`,
      is_editable: ['pending', 'on-hold', 'failed'].includes(o.status),
      needs_payment: ['pending', 'failed'].includes(o.status),
      needs_processing: true,
      date_created_gmt: wooGmt(created),
      date_modified_gmt: wooGmt(modified),
      date_completed_gmt: o.status === 'completed' ? wooGmt(modified) : null,
      date_paid_gmt: paid ? wooGmt(created) : null,
      currency_symbol: '€',
    };
  }

  private wooCustomer(email: string, now: number) {
    const id = this.customerId('woocommerce', email);
    return {
      id,
      date_created: wooLocal(now - 86_400_000),
      date_created_gmt: wooGmt(now - 86_400_000),
      date_modified: wooLocal(now),
      date_modified_gmt: wooGmt(now),
      email,
      first_name: 'Model',
      last_name: 'Buyer',
      role: 'customer',
      username: `buyer${id}`,
      billing: this.address({ email, phone: this.phone(email) }),
      shipping: this.address(null),
      is_paying_customer: false,
      avatar_url: 'https://secure.gravatar.com/avatar/?s=96&d=mm&r=g',
      meta_data: [],
    };
  }
}
