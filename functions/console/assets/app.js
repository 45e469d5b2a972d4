// The console's entry: signs in (a link's `#token=` fragment, or the session cookie the
// browser already holds), draws the header and the navigation for the session's scopes,
// and routes `#/…` hashes to the pages.

import * as api from './api.js';
import { h, replace, announce, errorText } from './ui.js';
import { createRouter } from './router.js';
import keysPage from './pages/keys.js';
import webhooksPage from './pages/webhooks.js';
import webhookPage from './pages/webhook.js';
import importsPage from './pages/imports.js';
import exportsPage from './pages/exports.js';
import catalogPage from './pages/catalog.js';
import productPage from './pages/product.js';
import attributesPage from './pages/attributes.js';

const READ = 'catalog:read';
const WRITE = 'catalog:write';
const MANAGE = 'settings:manage';

const NAV = [
  { id: 'keys', label: 'API keys', href: '#/keys', scope: MANAGE },
  { id: 'webhooks', label: 'Webhooks', href: '#/webhooks', scope: MANAGE },
  { id: 'imports', label: 'Imports', href: '#/imports', scope: WRITE },
  { id: 'exports', label: 'Exports', href: '#/exports', scope: READ },
  { id: 'products', label: 'Products', href: '#/products', scope: READ },
  { id: 'variants', label: 'Variants', href: '#/variants', scope: READ },
  { id: 'skus', label: 'SKUs', href: '#/skus', scope: READ },
  { id: 'attributes', label: 'Attributes', href: '#/attributes', scope: READ },
];

const ROUTES = [
  { pattern: '/keys', nav: 'keys', title: 'API keys', scope: MANAGE, page: keysPage },
  { pattern: '/webhooks', nav: 'webhooks', title: 'Webhooks', scope: MANAGE, page: webhooksPage },
  { pattern: '/webhooks/:id', nav: 'webhooks', title: 'Webhook', scope: MANAGE, page: webhookPage },
  { pattern: '/imports', nav: 'imports', title: 'Imports', scope: WRITE, page: importsPage },
  { pattern: '/exports', nav: 'exports', title: 'Exports', scope: READ, page: exportsPage },
  { pattern: '/products', nav: 'products', title: 'Products', scope: READ, page: (ctx) => catalogPage(ctx, 'products') },
  { pattern: '/products/:identifier', nav: 'products', title: 'Product', scope: READ, page: productPage },
  { pattern: '/variants', nav: 'variants', title: 'Variants', scope: READ, page: (ctx) => catalogPage(ctx, 'variants') },
  { pattern: '/skus', nav: 'skus', title: 'SKUs', scope: READ, page: (ctx) => catalogPage(ctx, 'skus') },
  { pattern: '/attributes', nav: 'attributes', title: 'Attributes', scope: READ, page: attributesPage },
];

let session = null;
let router = null;
let controller = null;
let firstRoute = true;

const $ = (id) => document.getElementById(id);
const can = (scope) => Boolean(session && session.scopes.includes(scope));

// --- signed out ------------------------------------------------------------------------

const HOW_TO_SIGN_IN = () => [
  h('p', {}, 'The console opens from a single-use sign-in link that is valid for 10 minutes. To get a new link, ask someone who manages this organization, or make one yourself:'),
  h('ul', { class: 'plain-list' },
    h('li', {}, 'with an API key that holds ', h('code', {}, 'settings:manage'), ': ',
      h('code', {}, 'POST /v1/console-sessions'), ' (its answer’s ', h('code', {}, 'url'), ' is the link);'),
    h('li', {}, 'or, as an operator: ', h('code', {}, 'catalog-admin console-link'), '.')),
  h('p', { class: 'hint' }, 'The console acts with the scopes of the key that made the link.'),
];

function showSignedOut({ linkError, ended, signedOut } = {}) {
  session = null;
  api.setCsrfToken(null);
  if (controller) controller.abort();
  $('session-info').hidden = true;
  $('mainnav').hidden = true;
  document.title = 'Signed out · Catalog console';
  const view = $('view');
  const title = h('h1', { tabindex: '-1' }, linkError ? 'This sign-in link cannot be used' : 'Sign in to the Catalog console');
  let alert = null;
  if (linkError) {
    alert = h('div', { class: 'alert', role: 'alert', id: 'signin-error' },
      h('p', { class: 'alert-title' }, 'This sign-in link is invalid, used or expired.'),
      h('p', {}, errorText(linkError)));
  } else if (ended) {
    alert = h('div', { class: 'alert', role: 'alert' }, 'Your session has ended (it expired or was signed out). Sign in again with a new link.');
  }
  replace(view, h('section', { class: 'signed-out panel', 'aria-labelledby': 'signed-out-h' },
    title, alert, h('h2', { id: 'signed-out-h' }, 'How to sign in'), HOW_TO_SIGN_IN()));
  if (signedOut) announce('You are signed out.');
  title.focus();
}

function showFatal(err) {
  replace($('view'), h('h1', {}, 'The console could not start'),
    h('div', { class: 'alert', role: 'alert' }, errorText(err)),
    h('p', {}, h('a', { href: window.location.pathname }, 'Try again')));
}

// --- signed in --------------------------------------------------------------------------

function drawNav() {
  const list = $('nav-list');
  replace(list, NAV.filter((n) => can(n.scope)).map((n) => h('li', {},
    h('a', { href: n.href, data: { nav: n.id } }, n.label))));
  $('mainnav').hidden = false;
}

function markNav(id) {
  for (const a of $('nav-list').querySelectorAll('a')) {
    if (a.dataset.nav === id) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function onRoute(route, params, query) {
  if (!session) return;
  if (controller) controller.abort();
  controller = new AbortController();
  const view = $('view');
  const heading = h('h1', { tabindex: '-1', id: 'page-title' }, route ? route.title : 'Page not found');
  const root = h('div', { class: 'page' });
  replace(view, heading, root);
  markNav(route && route.nav);
  const setTitle = (text) => {
    heading.textContent = text;
    document.title = `${text} · Catalog console`;
  };
  setTitle(route ? route.title : 'Page not found');
  if (!firstRoute) heading.focus();
  firstRoute = false;
  if (!route) {
    root.append(h('p', {}, 'There is no page at this address. ', h('a', { href: defaultHash() }, 'Go to the start page')));
    return;
  }
  if (route.scope && !can(route.scope)) {
    root.append(h('div', { class: 'alert', role: 'alert' },
      `This page needs the scope ${route.scope}, which this session does not hold. Sign in with a link made by a key that holds it.`));
    return;
  }
  const ctx = { root, params, query, signal: controller.signal, can, session, setTitle };
  Promise.resolve()
    .then(() => route.page(ctx))
    .catch((err) => {
      if (err && err.name === 'AbortError') return;
      if (err && err.status === 401) return;
      root.prepend(h('div', { class: 'alert', role: 'alert' }, errorText(err)));
    });
}

function defaultHash() {
  const first = NAV.find((n) => can(n.scope));
  return first ? first.href : '#/keys';
}

function startSession(result) {
  session = {
    org: result.org,
    scopes: Array.isArray(result.scopes) ? result.scopes : [],
    expiresAt: result.expiresAt,
  };
  api.setCsrfToken(result.csrfToken);
  $('org-id').textContent = session.org || '';
  $('session-info').hidden = false;
  drawNav();
  if (!router) {
    router = createRouter(ROUTES, onRoute, defaultHash());
    router.start();
  } else {
    router.refresh();
  }
}

async function signOut() {
  const button = $('sign-out');
  button.disabled = true;
  try {
    await api.signOut();
  } catch (err) {
    if (err.status !== 401) {
      button.disabled = false;
      const view = $('view');
      view.prepend(h('div', { class: 'alert', role: 'alert' }, `Signing out failed: ${errorText(err)}`));
      return;
    }
  }
  button.disabled = false;
  showSignedOut({ signedOut: true });
}

// --- start --------------------------------------------------------------------------------

/** The `token=` of the address's fragment (null when none); '+' stays '+'. */
function tokenOfHash() {
  const m = window.location.hash.match(/^#(?:.*&)?token=([^&]*)/);
  if (!m) return null;
  try { return decodeURIComponent(m[1]); } catch { return m[1]; }
}

/** The organization a link's token signs in to (its key id's first six characters). */
function orgOfToken(token) {
  const m = /^csl_([a-z0-9]{6})/.exec(token);
  return m ? m[1] : null;
}

/** Asks before signing in with a link, naming its organization: a link another site sent
 * cannot switch this browser to another organization unnoticed. Resolves true to go on. */
function confirmSignIn(token) {
  return new Promise((resolve) => {
    $('session-info').hidden = true;
    $('mainnav').hidden = true;
    document.title = 'Sign in · Catalog console';
    const org = orgOfToken(token);
    const title = h('h1', { tabindex: '-1', id: 'confirm-h' }, 'Sign in to the Catalog console');
    const go = h('button', { type: 'button', class: 'btn', id: 'confirm-sign-in' }, 'Sign in');
    const cancel = h('button', { type: 'button', class: 'btn btn-secondary' }, 'Cancel');
    go.addEventListener('click', () => resolve(true));
    cancel.addEventListener('click', () => resolve(false));
    replace($('view'), h('section', { class: 'signed-out panel', 'aria-labelledby': 'confirm-h' },
      title,
      h('p', {}, 'This link signs you in to organization ', h('strong', { id: 'confirm-org' }, org || 'unknown'),
        session && session.org !== org ? ` (you are signed in to ${session.org}: that session is replaced).` : '.'),
      h('p', { class: 'actions' }, go, ' ', cancel)));
    title.focus();
  });
}

/** Exchanges the `#token=` of the address (removed from it first), once the person
 * confirms; false when there is none. */
async function signInWithLink() {
  const token = tokenOfHash();
  if (token === null) return false;
  // The token is single use: drop it from the address bar and history at once.
  window.history.replaceState(null, '', window.location.pathname + window.location.search);
  if (!(await confirmSignIn(token))) {
    const current = await api.currentSession().catch(() => null);
    if (current) startSession(current);
    else showSignedOut({});
    return true;
  }
  let result;
  try {
    result = await api.exchangeToken(token);
  } catch (err) {
    if ([400, 401, 403, 404].includes(err.status)) showSignedOut({ linkError: err });
    else showFatal(err);
    return true;
  }
  startSession(result);
  return true;
}

async function boot() {
  api.setUnauthorizedHandler(() => showSignedOut({ ended: true }));
  $('sign-out').addEventListener('click', signOut);
  document.querySelector('.skip-link').addEventListener('click', (e) => {
    e.preventDefault();
    $('main').focus();
  });
  // A sign-in link opened in a tab that already shows the console.
  window.addEventListener('hashchange', () => { signInWithLink(); });
  if (await signInWithLink()) return;
  let result;
  try {
    result = await api.currentSession();
  } catch (err) {
    showFatal(err);
    return;
  }
  if (result) startSession(result);
  else showSignedOut({});
}

boot();
