// Hash routing: `#/keys`, `#/webhooks/<id>`, `#/products?search=…`. A hash that does not
// start with `#/` (such as a skip link's `#main`) is not a route and changes nothing.

/** The route path and query of a hash (`#/products/a%20b?page=2`). */
export function parseHash(hash = window.location.hash) {
  const raw = hash.replace(/^#/, '');
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q === -1 ? '' : raw.slice(q + 1));
  return { path, query };
}

/** Builds `#/a/<seg>?k=v` with every segment percent-encoded. */
export function hrefOf(segments, query) {
  const path = `#/${segments.map((s) => encodeURIComponent(s)).join('/')}`;
  const qs = query ? new URLSearchParams(query).toString() : '';
  return qs ? `${path}?${qs}` : path;
}

function match(pattern, path) {
  const want = pattern.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  if (want.length !== got.length) return null;
  const params = {};
  for (let i = 0; i < want.length; i += 1) {
    if (want[i].startsWith(':')) {
      try { params[want[i].slice(1)] = decodeURIComponent(got[i]); } catch { return null; }
    } else if (want[i] !== got[i]) return null;
  }
  return params;
}

/**
 * routes: [{pattern: '/webhooks/:id', ...anything}]; onRoute(route, params, query) is
 * called for each routed hash; an unknown route goes to `fallback` (a hash).
 */
export function createRouter(routes, onRoute, fallback) {
  let routed = false;
  function handle() {
    const { path, query } = parseHash();
    if (!path.startsWith('/')) {
      if (!routed) window.location.replace(fallback);
      return;
    }
    routed = true;
    for (const route of routes) {
      const params = match(route.pattern, path);
      if (params) {
        onRoute(route, params, query);
        return;
      }
    }
    onRoute(null, {}, query);
  }
  return {
    start() {
      window.addEventListener('hashchange', handle);
      handle();
    },
    stop() { window.removeEventListener('hashchange', handle); },
    refresh: handle,
  };
}

/** Replaces the hash's query without a new route (no hashchange, no history entry). */
export function setQuery(query) {
  const { path } = parseHash();
  const qs = new URLSearchParams(query).toString();
  const url = new URL(window.location.href);
  url.hash = qs ? `${path}?${qs}` : path;
  window.history.replaceState(window.history.state, '', url);
}
