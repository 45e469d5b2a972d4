// The API client: every call goes to `../v1/<path>` relative to the console's page, so
// the console works at `/console/` and behind a stage prefix (`/prod/console/`) alike.
// The session is an HttpOnly cookie the page never sees; the CSRF token is kept in memory
// only and sent with every call that is not a read.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

let csrfToken = null;
let onUnauthorized = () => {};

export function setCsrfToken(token) { csrfToken = token || null; }

/** Called with the ApiError when any call (other than the sign-in ones) answers 401. */
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

/** The console's root (the page's folder, ending in `/console/`). */
export function consoleRoot() {
  const u = new URL(document.baseURI || window.location.href);
  u.hash = '';
  u.search = '';
  if (!u.pathname.endsWith('/')) {
    u.pathname = /\/console$/.test(u.pathname) ? `${u.pathname}/` : u.pathname.replace(/[^/]*$/, '');
  }
  return u;
}

/** The absolute URL of API path `path` ("products", "/webhooks/x") with `query` added. */
export function apiUrl(path, query) {
  const url = new URL(`../v1/${String(path).replace(/^\/+/, '')}`, consoleRoot());
  if (query) {
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || v === '') continue;
      url.searchParams.set(k, String(v));
    }
  }
  return url;
}

/**
 * Percent-encodes one path segment (identifiers may hold anything but '/'). A segment of
 * only dots cannot be sent: browsers resolve "." and ".." (encoded or not) away, so the
 * call would reach another route; it is refused here instead.
 */
export const seg = (s) => {
  const text = String(s);
  if (/^\.{1,2}$/.test(text)) {
    throw new Error(`the identifier "${text}" cannot be used in a browser's URL; use the API directly`);
  }
  return encodeURIComponent(text);
};

/**
 * request('GET', 'products', {query, body, signal, auth401}) → the parsed JSON body
 * (null for an empty answer). Throws ApiError with the API's `error` message otherwise.
 */
export async function request(method, path, { query, body, signal, quiet401 = false } = {}) {
  const headers = { Accept: 'application/json' };
  const init = { method, credentials: 'same-origin', headers, signal, cache: 'no-store' };
  if (method !== 'GET' && method !== 'HEAD') {
    if (csrfToken) headers['X-CSRF-Token'] = csrfToken;
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
  }
  let res;
  try {
    res = await fetch(apiUrl(path, query), init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'The service could not be reached: check your connection and try again.');
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const message = (data && (data.error || data.message)) || `${res.status} ${res.statusText || 'error'}`;
    const err = new ApiError(res.status, message);
    if (res.status === 401 && !quiet401) onUnauthorized(err);
    if (res.status === 403 && headers['X-CSRF-Token'] && /X-CSRF-Token/.test(message)) {
      throw await replacedSession(err);
    }
    throw err;
  }
  return data;
}

export const get = (path, opts = {}) => request('GET', path, opts);
export const post = (path, body, opts = {}) => request('POST', path, { ...opts, body });
export const patch = (path, body, opts = {}) => request('PATCH', path, { ...opts, body });
export const del = (path, opts = {}) => request('DELETE', path, opts);

/** Every item of a paged list (at most `maxPages` pages of `limit`). */
export async function getAll(path, { query = {}, signal, limit = 200, maxPages = 20 } = {}) {
  const all = [];
  for (let page = 1; page <= maxPages; page += 1) {
    const res = await get(path, { query: { ...query, limit, page }, signal });
    const items = (res && res.result) || [];
    all.push(...items);
    const pages = res && res.pagination ? res.pagination.totalPages : 1;
    if (page >= pages || items.length < limit) break;
  }
  return all;
}

// --- the console session ------------------------------------------------------------

/** Exchanges a sign-in link's token for a session (sets the cookie); its `result`. */
export async function exchangeToken(token) {
  const res = await request('POST', 'console-sessions/exchange', { body: { token }, quiet401: true });
  return res.result;
}

/** The current session's `result`, or null when signed out (401). */
export async function currentSession() {
  try {
    const res = await request('GET', 'console-sessions/current', { quiet401: true });
    return res.result;
  } catch (e) {
    if (e.status === 401) return null;
    throw e;
  }
}

/**
 * A write refused for its CSRF token although it sent one: another tab signed in since, and
 * the cookie is now that session's. Nothing is retried under it (it may be another key or
 * organization); the person is told, or sent to sign in when no session is left.
 */
async function replacedSession(err) {
  const current = await currentSession().catch(() => null);
  if (!current) {
    onUnauthorized(err);
    return err;
  }
  return new ApiError(403, 'You signed in again in another tab, so this tab\'s session ended: reload the page to go on with the new one.');
}

export async function signOut() {
  await request('DELETE', 'console-sessions/current', { quiet401: true });
  csrfToken = null;
}
