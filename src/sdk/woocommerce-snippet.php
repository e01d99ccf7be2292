<?php
/**
 * emk storefront events for a WooCommerce shop (docs/platforms/woocommerce.md, "Storefront events").
 *
 * Paste into your child theme's functions.php (or a code-snippets plugin) and fill in the two values below.
 * It loads emk.js on every page and sends, with emk's event names:
 *   every page             active_on_site (emk.js itself)        logged-in customer  identify (setCustomer)
 *   single product page    viewed_product                        product category    collection_viewed
 *   search results         search_submitted                      checkout page       started_checkout
 *   add to cart            added_to_cart (WooCommerce's `added_to_cart` jQuery event; the product page's form)
 * Every event's source is `woocommerce:<your shop's host>`, as for the shop's webhooks.
 */

const EMK_BASE_URL = 'https://emk.example.com'; // your emk address
const EMK_SITE_ID = 'YOUR_SITE_ID';             // your workspace's site_id

/** JSON safe inside <script> (`<`, `>`, `&` and quotes escaped). */
function emk_json( $value ) {
	return wp_json_encode( $value, JSON_HEX_TAG | JSON_HEX_AMP | JSON_HEX_APOS | JSON_HEX_QUOT | JSON_UNESCAPED_SLASHES );
}

/** Without the values a page does not know. */
function emk_defined( $props ) {
	return array_filter( $props, function ( $value ) { return null !== $value; } );
}

/** What emk keys a product by: its WooCommerce id, as text, as the webhooks send it. */
function emk_product_props( $product ) {
	return emk_defined( array(
		'product_id' => (string) $product->get_id(),
		'title'      => $product->get_name(),
		'price'      => (float) wc_get_price_to_display( $product ),
		'currency'   => get_woocommerce_currency(),
		'url'        => get_permalink( $product->get_id() ),
		'image_url'  => wp_get_attachment_url( $product->get_image_id() ) ?: null,
		'sku'        => $product->get_sku() ?: null,
	) );
}

/** The calls for this page, in order: context, the customer, then what the page is. */
function emk_page_calls() {
	$calls = array( array( 'config', array( 'platform' => 'woocommerce:' . wp_parse_url( home_url(), PHP_URL_HOST ) ) ) );
	$user  = wp_get_current_user();
	if ( $user->exists() && is_email( $user->user_email ) ) {
		$calls[] = array( 'setCustomer', $user->user_email );
	}
	if ( ! function_exists( 'WC' ) ) {
		return $calls; // WooCommerce is off: page views only
	}
	if ( is_product() ) {
		$product = wc_get_product( get_queried_object_id() );
		if ( $product ) {
			$calls[] = array( 'track', 'viewed_product', emk_product_props( $product ) );
		}
	} elseif ( is_product_category() ) {
		$term    = get_queried_object();
		$calls[] = array( 'track', 'collection_viewed', array( 'collection_id' => (string) $term->term_id, 'title' => $term->name, 'url' => get_term_link( $term ) ) );
	} elseif ( is_search() ) {
		$calls[] = array( 'track', 'search_submitted', array( 'query' => get_search_query( false ) ) );
	} elseif ( is_checkout() && ! is_order_received_page() && WC()->cart && ! WC()->cart->is_empty() ) {
		$items = array();
		foreach ( WC()->cart->get_cart() as $item ) {
			$items[] = emk_defined( array(
				'product_id' => (string) $item['product_id'],
				'variant_id' => $item['variation_id'] ? (string) $item['variation_id'] : null,
				'title'      => $item['data']->get_name(),
				'quantity'   => (int) $item['quantity'],
				'price'      => (float) wc_get_price_to_display( $item['data'] ),
			) );
		}
		$calls[] = array( 'track', 'started_checkout', array( 'value' => (float) WC()->cart->get_total( 'edit' ), 'currency' => get_woocommerce_currency(), 'items' => $items ) );
	}
	return $calls;
}

add_action( 'wp_head', function () {
	echo "<script>window.emk = window.emk || function(){(emk.q = emk.q || []).push(arguments)};\n";
	foreach ( emk_page_calls() as $call ) {
		echo 'emk.apply(null, ' . emk_json( $call ) . ");\n";
	}
	echo "</script>\n";
	echo '<script async src="' . esc_url( EMK_BASE_URL . '/emk.js?s=' . rawurlencode( EMK_SITE_ID ) ) . "\"></script>\n";
}, 1 );

// Adds to cart: the product page's form (it leaves the page; emk.js sends on the way out) and WooCommerce's
// AJAX buttons (shop and category pages), which trigger `added_to_cart` on document.body with the button.
add_action( 'wp_footer', function () {
	if ( ! function_exists( 'WC' ) ) {
		return;
	}
	$product = is_product() ? wc_get_product( get_queried_object_id() ) : null;
	?>
	<script>
	(function () {
		var product = <?php echo emk_json( $product ? emk_product_props( $product ) : null ); ?>;
		var form = product && document.querySelector('form.cart');
		if (form) form.addEventListener('submit', function () {
			var quantity = form.querySelector('input[name="quantity"]');
			var variation = form.querySelector('input[name="variation_id"]');
			var added = Object.assign({}, product, { quantity: quantity ? Number(quantity.value) || 1 : 1 });
			if (variation && Number(variation.value)) added.variant_id = variation.value;
			emk('track', 'added_to_cart', added);
		});
		if (window.jQuery) jQuery(document.body).on('added_to_cart', function (event, fragments, hash, $button) {
			// A button inside the product page's form was counted by the submit above.
			if (!$button || !$button.data('product_id') || $button.closest('form.cart').length) return;
			var added = { product_id: String($button.data('product_id')), quantity: Number($button.data('quantity')) || 1 };
			if ($button.data('product_sku')) added.sku = String($button.data('product_sku'));
			emk('track', 'added_to_cart', added);
		});
	})();
	</script>
	<?php
} );
