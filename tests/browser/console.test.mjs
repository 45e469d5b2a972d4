// Browser test of the web console (functions/console/assets) against a running stack.
//
//   node tests/browser/console.test.mjs
//
// Environment:
//   CONSOLE_LINK    a fresh sign-in link (https://host/console#token=…)
//   RECEIVER_URL    a webhook receiver that answers 200
//   SQS_QUEUE_URL   an empty queue of the local AWS emulator, for an SQS destination
//   IMPORT_FILE     an NDJSON file of a few products
//   PRODUCT_ID      a seeded product with variants, SKUs and product attribute color = "red"
//   SCREENSHOT_DIR  where the PNGs go (default: a new temporary folder)
//   CHROMIUM        the browser (default /usr/bin/chromium)
//
// Prints {"testDelivery":"…","replayDelivery":"…"} on a line of its own on stdout, and
// exits 0 when every step passed, 1 with the first failure's message otherwise. Every wait
// is on the DOM (Playwright's waitFor / waitForFunction), never a fixed sleep.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import AxeBuilder from '@axe-core/playwright';

const env = (name, fallback) => {
  const v = process.env[name];
  if (v) return v;
  if (fallback !== undefined) return fallback;
  console.error(`FAIL: environment variable ${name} is required`);
  process.exit(2);
};
const LINK = env('CONSOLE_LINK');
const RECEIVER_URL = env('RECEIVER_URL');
const IMPORT_FILE = env('IMPORT_FILE');
const SQS_QUEUE_URL = env('SQS_QUEUE_URL');
const PRODUCT_ID = env('PRODUCT_ID');
const SHOTS = env('SCREENSHOT_DIR', '') || fs.mkdtempSync(path.join(os.tmpdir(), 'console-shots-'));
const CHROMIUM = env('CHROMIUM', '/usr/bin/chromium');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const STEP_TIMEOUT = 15_000;
const IMPORT_DEADLINE = 60_000;
const LOG_DEADLINE = 45_000;

fs.mkdirSync(SHOTS, { recursive: true });
if (!fs.existsSync(IMPORT_FILE)) {
  console.error(`FAIL: IMPORT_FILE ${IMPORT_FILE} does not exist`);
  process.exit(2);
}

const say = (msg) => process.stderr.write(`[console-test] ${msg}\n`);
class Failure extends Error {}
const check = (cond, msg) => { if (!cond) throw new Failure(msg); };
const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Collects console errors, page errors and CSP violations of a page. Failed-resource
 * messages for a 401 are allowed only while `expect401` is set (a used link, signed out).
 */
function watch(page, label) {
  const problems = [];
  const w = { expect401: false, expect403: false, problems };
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const text = m.text();
    if (w.expect401 && /status of 401/.test(text)) return;
    if (w.expect403 && /status of 403/.test(text)) return;
    problems.push(`${label}: console error: ${text}`);
  });
  page.on('pageerror', (e) => problems.push(`${label}: uncaught error: ${e.message}`));
  w.assertClean = () => {
    check(!problems.length, `errors in the browser console:\n  ${problems.join('\n  ')}`);
  };
  return w;
}

async function newPage(context, label, viewport) {
  const page = await context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  page.setDefaultTimeout(STEP_TIMEOUT);
  // Report every CSP violation on the console, whatever the browser itself logs.
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile || ''}:${e.lineNumber || ''})`);
    });
  });
  return { page, watcher: watch(page, label) };
}

/** Waits until no region is loading. */
const settled = (page) => page.waitForFunction(() => !document.querySelector('[aria-busy="true"]') && !document.querySelector('.loading'));

/** axe-core (no serious or critical violation), console clean, then a full-page screenshot. */
async function audit(page, watcher, name) {
  await settled(page);
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  if (bad.length) {
    const lines = bad.map((v) => `${v.impact} ${v.id}: ${v.help}\n      ${v.nodes.slice(0, 5).map((n) => n.target.join(' ')).join('\n      ')}`);
    throw new Failure(`axe found ${bad.length} serious/critical violation(s) on ${name}:\n    ${lines.join('\n    ')}`);
  }
  const minor = results.violations.length;
  watcher.assertClean();
  say(`${name}: axe clean (${minor} minor/moderate), screenshot ${name}.png`);
}

async function gotoNav(page, label, heading) {
  await page.getByRole('navigation').getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  const current = page.getByRole('navigation').locator('[aria-current="page"]');
  check((await current.textContent()).trim() === label, `the nav does not mark ${label} as the current page`);
  await settled(page);
}

/** Clicks Refresh until a log row shows `id` (or the deadline passes). */
async function refreshUntilLogged(page, id) {
  const deadline = Date.now() + LOG_DEADLINE;
  const cell = page.locator('#deliveries-list tbody code', { hasText: new RegExp(`^${escapeRe(id)}$`) });
  for (;;) {
    await page.locator('#refresh-log').click();
    try {
      await cell.first().waitFor({ timeout: 1500 });
      return;
    } catch {
      check(Date.now() < deadline, `delivery ${id} did not appear in the delivery log within ${LOG_DEADLINE / 1000} s`);
    }
  }
}

/** Fills and sends the Attributes page's form: a text attribute of products. */
async function createAttribute(page, key, displayName) {
  const form = page.locator('#create-attribute');
  await form.getByLabel('Display name').fill(displayName);
  await form.getByLabel('Key', { exact: true }).fill(key);
  await form.getByLabel('Target entity').selectOption('product');
  await form.getByLabel('Type', { exact: true }).selectOption('text');
  await form.getByRole('button', { name: 'Create attribute' }).click();
}

// --------------------------------------------------------------------------------------

const steps = [];
const step = (name, fn) => steps.push({ name, fn });
const state = {};

step('sign in with the link; the link works once', async ({ browser, context, page, watcher }) => {
  await page.goto(LINK);
  // nothing is exchanged before the person confirms, and the page names the organization
  const linkOrg = /#token=csl_([a-z0-9]{6})/.exec(LINK)[1];
  await page.locator('#confirm-org', { hasText: linkOrg }).waitFor();
  check(await page.locator('#session-info').isHidden(), 'the header shows a session before the sign-in is confirmed');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.locator('#session-info').waitFor({ state: 'visible' });
  await page.waitForFunction(() => document.getElementById('org-id').textContent.trim() !== '');
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  const token = new URL(LINK).hash.replace(/^#/, '');
  check(!page.url().includes('token=') && !page.url().includes(token), `the address still holds the token: ${page.url()}`);
  state.org = (await page.locator('#org-id').textContent()).trim();
  await settled(page);
  watcher.assertClean();

  const other = await browser.newContext();
  try {
    const { page: p2, watcher: w2 } = await newPage(other, 'used link');
    w2.expect401 = true;
    await p2.goto(LINK);
    await p2.getByRole('button', { name: 'Sign in', exact: true }).click();
    await p2.getByRole('alert').filter({ hasText: /invalid, used or expired/i }).waitFor();
    check(!p2.url().includes('token='), 'the used link\'s token stayed in the address');
    check(await p2.locator('#session-info').isHidden(), 'the header shows a session for a used link');
    check(await p2.getByText('catalog-admin console-link').count() > 0, 'the signed-out screen does not say how to get a link');
    w2.assertClean();
  } finally {
    await other.close();
  }
  say(`signed in to ${state.org}`);
  void context;
});

step('API keys: create, shown once, listed, revoked', async ({ page, watcher }) => {
  await gotoNav(page, 'API keys', 'API keys');
  const form = page.locator('#create-key');
  await form.getByLabel('Name', { exact: true }).fill('browser-key');
  await form.getByLabel('catalog:read', { exact: true }).check();
  await form.getByRole('button', { name: 'Create key' }).click();
  const secret = page.getByTestId('new-key-value');
  await secret.waitFor();
  const key = await secret.inputValue();
  check(key.startsWith('cat_'), `the new key is not shown (got "${key.slice(0, 8)}…")`);
  check(await secret.getAttribute('readonly') !== null, 'the new key field is not read-only');
  await page.getByText('will not be shown again').first().waitFor();
  const rows = page.locator('#keys-list tbody tr', { has: page.locator('th', { hasText: /^browser-key$/ }) });
  await rows.first().waitFor();
  const row = rows.last();
  const keyId = (await row.locator('code').first().textContent()).trim();
  check(keyId.length > 0, 'the listed key shows no id');
  await audit(page, watcher, 'keys');

  await row.getByRole('button', { name: /^Revoke/ }).click();
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  await dialog.getByRole('button', { name: 'Revoke key' }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.locator('#keys-list code', { hasText: new RegExp(`^${escapeRe(keyId)}$`) }).waitFor({ state: 'detached' });
  await settled(page);
  watcher.assertClean();
  say(`key ${keyId} created and revoked`);
});

step('webhooks: create, test event, replay, delivery log', async ({ page, watcher }) => {
  await gotoNav(page, 'Webhooks', 'Webhooks');
  const form = page.locator('#create-webhook');
  await form.waitFor();
  await form.getByLabel('Endpoint URL').fill(RECEIVER_URL);
  await form.getByLabel('product.updated', { exact: true }).check();
  await form.getByLabel('Changed fields (optional)').fill('name, product.color');
  await form.getByLabel('Payload').selectOption('changes');
  // a filter from the explorer's builder: only products whose identifier contains "chair"
  const filter = form.locator('#webhook-filter');
  await filter.getByRole('button', { name: 'Add condition' }).click();
  await filter.getByLabel('Attribute').selectOption('_identifier');
  await filter.getByLabel('Operator').selectOption('CONTAINS');
  await filter.getByLabel('Value').fill('chair');
  await form.getByRole('button', { name: 'Create subscription' }).click();
  await page.locator('#new-webhook-link').waitFor();
  const secret = page.getByTestId('webhook-secret');
  if (await secret.count()) check((await secret.inputValue()).startsWith('whsec_'), 'the signing secret is not shown');
  await page.locator('#webhooks-list a', { hasText: RECEIVER_URL }).first().waitFor();
  await audit(page, watcher, 'webhooks');

  await page.locator('#new-webhook-link').click();
  await page.getByRole('heading', { level: 1, name: 'Webhook subscription' }).waitFor();
  await settled(page);
  const fields = await page.locator('#webhook-summary').textContent();
  check(fields.includes('product.color') && fields.includes('name'), `the changed fields are not shown: ${fields}`);
  check(fields.includes('The notice and what changed'), `the payload is not shown: ${fields}`);
  check(fields.includes('{"_identifier":[{"operator":"CONTAINS","value":"chair"}]} (all)'), `the filter is not shown: ${fields}`);
  await page.getByRole('button', { name: 'Send test event' }).click();
  const testId = (await page.locator('#test-delivery-id').textContent()).trim();
  check(testId.length > 0, 'no delivery id was shown for the test event');
  await refreshUntilLogged(page, testId);

  const testRow = page.locator('#deliveries-list tbody tr', { has: page.locator('code', { hasText: new RegExp(`^${escapeRe(testId)}$`) }) });
  await testRow.getByRole('button', { name: /^Replay/ }).click();
  const replayId = (await page.locator('#replay-delivery-id').textContent()).trim();
  check(replayId && replayId !== testId, `the replay did not give a new delivery id (${replayId})`);
  await refreshUntilLogged(page, replayId);
  await settled(page);
  await audit(page, watcher, 'webhook-log');
  process.stdout.write(`${JSON.stringify({ testDelivery: testId, replayDelivery: replayId })}\n`);
});

/** The first message on the emulator's queue (SQS's JSON protocol, polled): its body. */
async function firstMessage(queueUrl) {
  const endpoint = new URL(queueUrl).origin;
  const deadline = Date.now() + LOG_DEADLINE;
  while (Date.now() < deadline) {
    const res = await fetch(`${endpoint}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.ReceiveMessage',
        authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0',
      },
      body: JSON.stringify({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }),
    });
    const out = await res.json();
    if (out.Messages && out.Messages.length) return JSON.parse(out.Messages[0].Body);
  }
  throw new Failure(`nothing arrived on ${queueUrl}`);
}

step('webhooks: an SQS queue, verified with its token', async ({ page, watcher }) => {
  await gotoNav(page, 'Webhooks', 'Webhooks');
  const form = page.locator('#create-webhook');
  await form.waitFor();
  await form.getByLabel('Destination', { exact: true }).selectOption('sqs');
  await form.getByLabel('Queue URL').fill(SQS_QUEUE_URL);
  await form.getByLabel('product.created', { exact: true }).check();
  await form.getByRole('button', { name: 'Create subscription' }).click();
  await page.locator('#awaits-verification').waitFor();
  check(await page.getByTestId('webhook-secret').count() === 0, 'an SQS destination was shown a signing secret');
  await page.locator('#webhooks-list a', { hasText: SQS_QUEUE_URL }).first().waitFor();
  await page.locator('#new-webhook-link').click();
  await page.getByRole('heading', { level: 1, name: 'Webhook subscription' }).waitFor();
  await settled(page);
  const before = await page.locator('#webhook-summary').textContent();
  check(before.includes('Awaiting verification') && before.includes('SQS queue'), `the summary does not show the pending SQS destination: ${before}`);
  check(await page.locator('#rotate-form').isHidden(), 'an SQS destination offers to rotate a secret');
  const message = await firstMessage(SQS_QUEUE_URL);
  check(message.event === 'webhook.verification' && message.token, `the queue got ${JSON.stringify(message)}`);
  await audit(page, watcher, 'webhook-verify');
  await page.getByLabel('Verification token').fill(message.token);
  await page.getByRole('button', { name: 'Verify destination' }).click();
  await page.locator('#verified').waitFor();
  const after = await page.locator('#webhook-summary').textContent();
  check(after.includes('Enabled') && !after.includes('Awaiting'), `the summary does not show it enabled: ${after}`);
  check(await page.locator('#verify-form').isHidden(), 'the verification form stays after verifying');
  watcher.assertClean();
  say('SQS destination created and verified');
});

step('imports: upload, progress, succeeded, history', async ({ page, watcher }) => {
  await gotoNav(page, 'Imports', 'Imports');
  await page.getByLabel('NDJSON file').setInputFiles(IMPORT_FILE);
  await page.getByRole('button', { name: 'Upload and import' }).click();
  const upload = page.getByRole('progressbar', { name: 'Upload' });
  await upload.waitFor();
  await page.waitForFunction(() => {
    const bars = document.querySelectorAll('#import-run progress');
    return bars.length === 2 && bars[0].value === 100;
  });
  const status = page.locator('#import-status');
  await status.locator('[data-status]').waitFor();
  await page.waitForFunction(() => {
    const s = document.querySelector('#import-status [data-status]');
    return s && ['succeeded', 'completed_with_errors', 'failed'].includes(s.dataset.status);
  }, null, { timeout: IMPORT_DEADLINE });
  const final = await status.locator('[data-status]').getAttribute('data-status');
  check(final === 'succeeded', `the import ended ${final}: ${await page.locator('#import-run').textContent()}`);
  const importId = (await status.locator('code').textContent()).trim();
  await page.locator('#imports-list tbody tr', { hasText: importId }).locator('[data-status="succeeded"]').waitFor();
  await audit(page, watcher, 'imports');
  say(`import ${importId} succeeded`);
});

step('exports: start, progress, download', async ({ page, watcher }) => {
  await gotoNav(page, 'Exports', 'Exports');
  await page.getByRole('button', { name: 'Start export' }).click();
  const status = page.locator('#export-status');
  await status.locator('[data-status]').waitFor();
  await page.waitForFunction(() => {
    const s = document.querySelector('#export-status [data-status]');
    return s && ['succeeded', 'failed'].includes(s.dataset.status);
  }, null, { timeout: IMPORT_DEADLINE });
  const final = await status.locator('[data-status]').getAttribute('data-status');
  check(final === 'succeeded', `the export ended ${final}: ${await page.locator('#export-run').textContent()}`);
  const bar = await page.locator('#export-progress').evaluate((p) => [p.value, p.max]);
  check(bar[0] === bar[1] && bar[1] > 0, `the progress bar is not full: ${bar}`);
  // the download link is the presigned file: gzip
  const href = await page.locator('#export-link a').getAttribute('href');
  const file = await page.request.get(href);
  check(file.status() === 200, `the download answered ${file.status()}`);
  const bytes = await file.body();
  check(bytes[0] === 0x1f && bytes[1] === 0x8b, 'the downloaded file is not gzip');
  const exportId = (await status.locator('code').textContent()).trim();
  await page.locator('#exports-list tbody tr', { hasText: exportId }).locator('[data-status="succeeded"]').waitFor();
  await audit(page, watcher, 'exports');
  say(`export ${exportId} succeeded, ${bytes.length} bytes downloaded`);
});

step('catalog: filter color = red, open the product', async ({ context, page, watcher }) => {
  await gotoNav(page, 'Products', 'Products');
  await page.getByRole('button', { name: 'Add condition' }).click();
  const cond = page.locator('.condition').last();
  const attr = cond.getByLabel('Attribute');
  const values = await attr.locator('option').evaluateAll((os) => os.map((o) => o.value));
  const colorKey = values.includes('product.color') ? 'product.color' : values.find((v) => v.endsWith('.color'));
  check(colorKey, `no color attribute to filter on (options: ${values.join(', ')})`);
  await attr.selectOption(colorKey);
  // the operators offered are the ones the API's document declares for the type and field
  const doc = await page.evaluate(async () => (await fetch('../v1/openapi.json')).json());
  const matrix = doc.components.parameters.search['x-operators'];
  const offered = () => cond.getByLabel('Operator').locator('option').evaluateAll((os) => os.map((o) => o.value));
  check(JSON.stringify(await offered()) === JSON.stringify(matrix.types.text), `text operators offered: ${await offered()}`);
  await attr.selectOption('_updated_at');
  check(JSON.stringify(await offered()) === JSON.stringify(matrix.system._updated_at), `_updated_at operators offered: ${await offered()}`);
  check((await offered()).includes('IN_THE_LAST'), 'no IN_THE_LAST for a time');
  await attr.selectOption(colorKey);
  await cond.getByLabel('Operator').selectOption('EQUALS');
  await cond.getByLabel('Value').fill('red');
  await page.getByLabel('Per page').selectOption('200');
  await page.getByRole('button', { name: 'Apply', exact: true }).click();
  await page.locator('#result-total', { hasText: 'match the filter' }).waitFor();
  const link = page.locator('#catalog-results a', { hasText: new RegExp(`^${escapeRe(PRODUCT_ID)}$`) });
  await link.waitFor();
  const total = (await page.locator('#result-total').textContent()).trim();
  check(/^\d+ products match the filter$/.test(total), `no total is shown ("${total}")`);
  const colors = await page.locator('#catalog-results tbody tr').evaluateAll((trs, key) => {
    const idx = [...document.querySelectorAll('#catalog-results thead th')].findIndex((th) => th.textContent === key);
    return trs.map((tr) => (idx < 0 ? 'red' : tr.children[idx].textContent.trim()));
  }, colorKey);
  check(colors.every((c) => /red/i.test(c)), `the filter let other colors through: ${colors.join(', ')}`);
  await audit(page, watcher, 'products');

  // The same list at 375 px: nothing scrolls the document sideways.
  const { page: mobile, watcher: mw } = await newPage(context, 'mobile', { width: 375, height: 812 });
  await mobile.goto(page.url());
  await mobile.locator('#catalog-results a', { hasText: new RegExp(`^${escapeRe(PRODUCT_ID)}$`) }).waitFor();
  await audit(mobile, mw, 'mobile-products');
  const width = await mobile.evaluate(() => document.documentElement.scrollWidth);
  check(width <= 375, `the document scrolls horizontally at 375 px (scrollWidth ${width})`);
  await mobile.close();

  await link.click();
  await page.locator('#product-tree').waitFor();
  await page.locator('h1', { hasText: /\S/ }).waitFor();
  const variants = await page.locator('.node-variant').count();
  const skus = await page.locator('.node-sku').count();
  check(variants > 0 && skus > 0, `the product shows ${variants} variants and ${skus} SKUs`);
  await page.locator('.badge-own').first().waitFor();
  await page.locator('.badge-inherited').first().waitFor();
  await page.getByText('Self updated (selfUpdatedAt)').first().waitFor();
  // its history: the seed's creation, by the test's API key, with what it set
  const created = page.locator('#history-list tr', { hasText: 'product.created' });
  await created.waitFor({ timeout: 60000 });
  const createdText = await created.innerText();
  check(/API key/.test(createdText) && /product\.color/.test(createdText) && /red/.test(createdText),
    `the history's creation does not say who and what: ${createdText}`);
  await audit(page, watcher, 'product');
  say(`product ${PRODUCT_ID}: ${variants} variants, ${skus} SKUs`);
});

step('attributes: create one, listed', async ({ page, watcher }) => {
  await gotoNav(page, 'Attributes', 'Attributes');
  // the form offers exactly the types and targets the API's document declares
  const doc = await page.evaluate(async () => (await fetch('../v1/openapi.json')).json());
  const create = doc.components.schemas.AttributeCreate.properties;
  const offered = async (id) => page.locator(`#${id} option`).evaluateAll((os) => os.map((o) => o.value));
  const [types, targets] = [await offered('attr-type'), await offered('attr-target')];
  check(JSON.stringify(types) === JSON.stringify(create.type.enum), `types offered: ${types.join(', ')}`);
  check(JSON.stringify(targets) === JSON.stringify(create.targetEntity.enum), `targets offered: ${targets.join(', ')}`);
  check(types.length === 12, `${types.length} types in the document`);
  const key = `browser_${Date.now().toString(36)}`;
  await createAttribute(page, key, 'Browser test attribute');
  await page.locator('#attributes-list code', { hasText: new RegExp(`^product\\.${key}$`) }).waitFor();
  await audit(page, watcher, 'attributes');
});

step('variants and SKUs: listed, accessible', async ({ page, watcher }) => {
  for (const [label, name] of [['Variants', 'variants'], ['SKUs', 'skus']]) {
    await gotoNav(page, label, label);
    await page.locator('#catalog-results tbody tr').first().waitFor();
    await audit(page, watcher, name);
  }
});

step('another tab signs in: this tab says so, and its write does nothing', async ({ context, page, watcher }) => {
  await gotoNav(page, 'Attributes', 'Attributes');
  // a second link, made by this session, opened in another tab of the same browser
  const url = await page.evaluate(async () => {
    const base = new URL('../v1/', window.location.href);
    const opts = { credentials: 'same-origin', headers: { Accept: 'application/json' } };
    const session = await (await fetch(new URL('console-sessions/current', base), opts)).json();
    const headers = { ...opts.headers, 'X-CSRF-Token': session.result.csrfToken };
    const r = await fetch(new URL('console-sessions', base), { ...opts, method: 'POST', headers });
    return (await r.json()).result.url;
  });
  const { page: tab, watcher: w2 } = await newPage(context, 'second tab');
  await tab.goto(url);
  await tab.getByRole('button', { name: 'Sign in', exact: true }).click();
  await tab.locator('#session-info').waitFor({ state: 'visible' });
  await settled(tab);
  w2.assertClean();
  await tab.close();

  // this tab still holds the ended session's CSRF token: its write is refused, and it says why
  watcher.expect403 = true;
  const key = `replaced_${Date.now().toString(36)}`;
  await createAttribute(page, key, 'Not created');
  await page.getByRole('alert').filter({ hasText: /signed in again in another tab/ }).waitFor();
  watcher.expect403 = false;
  // reloaded, the tab goes on with the new session: nothing was created
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Attributes', exact: true }).waitFor();
  await page.locator('#attributes-list code').first().waitFor();
  await settled(page);
  const created = await page.locator('#attributes-list code', { hasText: new RegExp(`^product\\.${key}$`) }).count();
  check(created === 0, `the refused write created attribute ${key}`);
  watcher.assertClean();
});

step('sign out: the session is gone', async ({ page, watcher }) => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { level: 1, name: 'Sign in to the Catalog console' }).waitFor();
  check(await page.locator('#mainnav').isHidden(), 'the navigation is still shown after signing out');
  watcher.expect401 = true;
  const status = await page.evaluate(async () => {
    const r = await fetch(new URL('../v1/console-sessions/current', window.location.href), { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    return r.status;
  });
  check(status === 401, `GET console-sessions/current answers ${status} after signing out`);
  await audit(page, watcher, 'signed-out');
});

// --------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  // launch() starts Chromium with a new temporary profile (user-data-dir) of its own.
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });
  let passed = 0;
  let current = null;
  let page = null;
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await newPage(context, 'console');
    page = p.page;
    for (const s of steps) {
      current = s;
      const t0 = Date.now();
      await s.fn({ browser, context, page, watcher: p.watcher });
      passed += 1;
      say(`ok ${passed} - ${s.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    }
  } catch (err) {
    if (page) await page.screenshot({ path: path.join(SHOTS, 'failure.png'), fullPage: true }).catch(() => {});
    console.error(`FAIL step ${passed + 1} (${current ? current.name : 'start'}): ${err.message}`);
    if (!(err instanceof Failure) && err.stack) console.error(err.stack.split('\n').slice(1, 4).join('\n'));
    console.error(`screenshots in ${SHOTS}`);
    console.log(`console-browser: ${passed} passed, 1 failed`);
    await browser.close().catch(() => {});
    process.exit(1);
  }
  await browser.close();
  say(`screenshots in ${SHOTS}; ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`console-browser: ${passed} passed, 0 failed`);
}

main().catch((err) => {
  console.error(`FAIL: ${err.message}`);
  process.exit(1);
});
