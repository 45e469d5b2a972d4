// One webhook subscription: GET /webhooks/{id}; PATCH /webhooks/{id} (edit, enable,
// disable); POST /webhooks/{id}/rotate-secret (HTTPS only); POST /webhooks/{id}/verify and
// …/verification (an AWS destination awaiting verification); POST /webhooks/{id}/test; DELETE
// /webhooks/{id}; and its delivery log, GET /webhooks/{id}/deliveries (status and event
// filters, paged with "Load more"), with POST …/deliveries/{deliveryId}/replay per entry.

import * as api from '../api.js';
import {
  h, replace, announce, errorArea, table, field, busy, secretBox, time, badge, code,
  dl, confirmDialog, option, dash,
} from '../ui.js';
import {
  loadEventTypes, topicPicker, statusCell, healthPairs, changedFieldsInput, changedFieldsCell, filterCell,
  filterInput,
  destinationInput, destinationCell, destinationType, addressOf, payloadInput,
} from './webhooks.js';
import { filterChoices } from './catalog.js';

const LOG_PAGE = 25;
const DELIVERY_STATUSES = [
  ['pending', 'Pending (queued)'], ['retrying', 'Retrying'], ['succeeded', 'Succeeded'],
  ['failed', 'Failed'], ['cancelled', 'Cancelled'],
];
const STATUS_KIND = { succeeded: 'ok', failed: 'bad', retrying: 'warn', cancelled: 'muted', pending: '' };

const isEnabled = (w) => w.enabled !== false;
const isPending = (w) => w.status === 'pending_verification';

/** The changes coalesced into a delivery (0: a replay or a test event). */
function coalescedOf(d) {
  return typeof d.changes === 'number' ? d.changes : null;
}

function attemptsCell(d) {
  const log = Array.isArray(d.attemptLog) ? d.attemptLog : [];
  const count = d.attempts ?? log.length;
  if (!log.length) return String(count);
  return h('details', { class: 'attempts' },
    h('summary', {}, `${count} attempt${count === 1 ? '' : 's'}`),
    h('ol', { class: 'attempt-list' }, log.map((a) => h('li', {},
      time(a.at), ' — ',
      a.statusCode !== undefined && a.statusCode !== null ? `HTTP ${a.statusCode}` : (a.error ? 'no answer' : 'accepted'),
      typeof a.durationMs === 'number' ? ` in ${a.durationMs} ms` : '',
      a.error ? h('span', { class: 'reason' }, ` (${a.error})`) : null))));
}

export default async function webhookPage(ctx) {
  const { root, signal, params } = ctx;
  const id = params.id;
  const path = `webhooks/${api.seg(id)}`;
  const errors = errorArea();
  const summary = h('div', { id: 'webhook-summary' });
  const output = h('div', { id: 'action-output', class: 'output' });
  const editBox = h('div');
  const logBox = h('div', { id: 'deliveries-list', 'aria-busy': 'true' });
  let hook = null;
  let eventTypes = [];
  let filterOffer = { defs: [], operators: { types: {}, system: {} } };

  // --- summary and actions
  function drawSummary() {
    const pairs = [
      ['Destination', destinationCell(hook)],
      ['Description', hook.description || dash()],
      ['Topics', h('span', { class: 'tags' }, (hook.topics || []).map((t) => badge(t)))],
      ['Filter', filterCell(hook)],
      ['Changed fields', changedFieldsCell(hook)],
      ['Payload', hook.payload === 'changes' ? 'The notice and what changed' : 'The notice'],
      ['Status', statusCell(hook)],
      ['Created', time(hook.createdAt)],
      ['Updated', time(hook.updatedAt)],
      hook.previousSecretExpiresAt ? ['Previous secret signs until', time(hook.previousSecretExpiresAt)] : null,
      ...healthPairs(hook),
      ['ID', code(hook.id)],
    ];
    replace(summary, dl(pairs));
    toggleButton.textContent = isEnabled(hook) ? 'Disable' : 'Enable';
    // AWS destinations have no signing secret; a pending one takes its token, not tests
    rotateForm.hidden = destinationType(hook) !== 'https';
    verifyForm.hidden = !isPending(hook);
    testButton.hidden = isPending(hook);
  }

  const testButton = h('button', { type: 'button', class: 'btn', id: 'send-test' }, 'Send test event');
  const toggleButton = h('button', { type: 'button', class: 'btn btn-secondary', id: 'toggle-webhook' }, 'Disable');
  const deleteButton = h('button', { type: 'button', class: 'btn btn-danger', id: 'delete-webhook' }, 'Delete subscription');
  const overlap = field('Keep the current secret signing for', { name: 'overlap' }, {
    tag: 'select',
    hint: 'During the overlap every delivery is signed with both secrets, so receivers can switch without losing any.',
    options: [
      { value: '0', label: 'No overlap: it stops at once' },
      { value: '3600', label: '1 hour' },
      { value: '21600', label: '6 hours' },
      { value: '86400', label: '24 hours (the longest)' },
    ],
  });
  const rotateButton = h('button', { type: 'submit', class: 'btn btn-secondary' }, 'Rotate secret');
  const rotateForm = h('form', { class: 'inline-form', id: 'rotate-form', 'aria-labelledby': 'rotate-h' },
    h('h3', { id: 'rotate-h' }, 'Rotate the signing secret'), overlap.wrap, rotateButton);

  const token = field('Verification token', { name: 'token', autocomplete: 'off', required: true },
    { hint: 'The token of the latest webhook.verification message your queue or bus received. Nothing else is delivered until it is confirmed.' });
  const verifyButton = h('button', { type: 'submit', class: 'btn' }, 'Verify destination');
  const resendButton = h('button', { type: 'button', class: 'btn btn-secondary', id: 'resend-verification' }, 'Send a new verification message');
  const verifyForm = h('form', { class: 'inline-form', id: 'verify-form', 'aria-labelledby': 'verify-h' },
    h('h3', { id: 'verify-h' }, 'Verify the destination'), token.wrap, h('div', { class: 'row wrap-row' }, verifyButton, resendButton));

  verifyForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    await busy(verifyButton, async () => {
      errors.clear();
      try {
        const res = await api.post(`${path}/verify`, { token: token.input.value.trim() }, { signal });
        hook = res.result;
        drawSummary();
        replace(output, h('p', { id: 'verified' }, 'Destination verified: catalog events are delivered to it from now on.'));
        announce('Destination verified.');
      } catch (err) { errors.show(err); }
    });
  });

  resendButton.addEventListener('click', () => busy(resendButton, async () => {
    errors.clear();
    try {
      const res = await api.post(`${path}/verification`, undefined, { signal });
      replace(output, h('p', {}, 'A new verification message was queued as delivery ', code(res.result.deliveryId), '; earlier tokens no longer work.'));
      announce('A new verification message was queued.');
    } catch (err) { errors.show(err); }
  }));

  testButton.addEventListener('click', () => busy(testButton, async () => {
    errors.clear();
    try {
      const res = await api.post(`${path}/test`, undefined, { signal });
      const deliveryId = res.result.deliveryId;
      replace(output, h('p', {}, 'Test event queued as delivery ', h('code', { id: 'test-delivery-id' }, deliveryId), '. Refresh the delivery log to follow it.'));
      announce(`Test event queued as delivery ${deliveryId}.`);
    } catch (err) { errors.show(err); }
  }));

  toggleButton.addEventListener('click', () => busy(toggleButton, async () => {
    errors.clear();
    try {
      const res = await api.patch(path, { enabled: !isEnabled(hook) }, { signal });
      hook = res.result;
      drawSummary();
      announce(`Subscription ${isEnabled(hook) ? 'enabled' : 'disabled'}.`);
    } catch (err) { errors.show(err); }
  }));

  deleteButton.addEventListener('click', async () => {
    const ok = await confirmDialog({
      title: 'Delete this subscription?',
      message: `No more deliveries will go to ${addressOf(hook)}, and its delivery log goes with it.`,
      confirmLabel: 'Delete subscription',
    });
    if (!ok) return;
    await busy(deleteButton, async () => {
      try {
        await api.del(path, { signal });
        announce('Subscription deleted.');
        window.location.hash = '#/webhooks';
      } catch (err) { errors.show(err); }
    });
  });

  rotateForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const seconds = Number(overlap.input.value);
    const ok = await confirmDialog({
      title: 'Rotate the signing secret?',
      message: seconds
        ? `A new secret is made now; the current one keeps signing beside it for ${overlap.input.selectedOptions[0].textContent}.`
        : 'A new secret is made now and the current one stops signing at once: update your receiver right away.',
      confirmLabel: 'Rotate secret',
    });
    if (!ok) return;
    await busy(rotateButton, async () => {
      errors.clear();
      try {
        const res = await api.post(`${path}/rotate-secret`, { expireCurrentInSeconds: seconds }, { signal });
        hook = res.result;
        drawSummary();
        const until = hook.previousSecretExpiresAt;
        replace(output, secretBox({
          heading: 'New signing secret',
          label: 'Signing secret',
          value: hook.secret || '',
          testId: 'rotated-secret',
          note: until
            ? `Copy it now: it will not be shown again. The previous secret keeps signing beside it until ${new Date(until).toLocaleString()}.`
            : 'Copy it now: it will not be shown again. The previous secret no longer signs.',
        }));
        announce('Secret rotated. Copy the new secret now.');
        output.querySelector('input')?.focus();
      } catch (err) { errors.show(err); }
    });
  });

  // --- edit form
  function drawEdit() {
    const url = destinationInput(hook);
    const description = field('Description (optional)', { name: 'description', value: hook.description || '', maxlength: '500' });
    const picker = topicPicker(eventTypes, hook.topics || []);
    const changed = changedFieldsInput(hook.changedFields);
    const payload = payloadInput(hook.payload);
    const filter = filterInput(filterOffer, hook.filter);
    const save = h('button', { type: 'submit', class: 'btn' }, 'Save changes');
    const formErrors = errorArea();
    const form = h('form', { class: 'form', id: 'edit-webhook', novalidate: true },
      formErrors.el, url.el, description.wrap, picker.el, filter.wrap, changed.wrap, payload.wrap, h('div', { class: 'actions' }, save));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      formErrors.clear();
      const topics = picker.values();
      if (!topics.length) {
        formErrors.show(new Error('Choose at least one topic.'));
        picker.focus();
        return;
      }
      const f = filter.body();
      if (f instanceof Error) { formErrors.show(f); return; }
      const body = { ...url.body(), topics, description: description.input.value.trim() || null, changedFields: changed.values(), payload: payload.input.value, filter: f };
      await busy(save, async () => {
        try {
          const res = await api.patch(path, body, { signal });
          hook = res.result;
          drawSummary();
          announce('Subscription saved.');
        } catch (err) { formErrors.show(err); }
      });
    });
    replace(editBox, h('details', { class: 'panel edit' },
      h('summary', {}, h('h2', { class: 'summary-heading' }, 'Edit subscription')), form));
  }

  // --- delivery log
  const statusSel = field('Status', { name: 'status', id: 'log-status' }, {
    tag: 'select', options: [{ value: '', label: 'Any status' }, ...DELIVERY_STATUSES.map(([value, label]) => ({ value, label }))],
  });
  const eventSel = field('Event', { name: 'event', id: 'log-event' }, { tag: 'select', options: [{ value: '', label: 'Any event' }] });
  const refresh = h('button', { type: 'button', class: 'btn btn-secondary', id: 'refresh-log' }, 'Refresh');
  const filters = h('form', { class: 'filters', id: 'log-filters', 'aria-label': 'Delivery log filters' },
    statusSel.wrap, eventSel.wrap,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn btn-secondary' }, 'Apply filters'), refresh));
  let rows = [];
  let page = 1;
  let totalPages = 0;
  let total = 0;

  async function replay(d, button) {
    await busy(button, async () => {
      errors.clear();
      try {
        const res = await api.post(`${path}/deliveries/${api.seg(d.id)}/replay`, undefined, { signal });
        const newId = res.result.id || res.result.deliveryId;
        replace(output, h('p', {}, 'Delivery ', code(d.id), ' replayed as new delivery ', h('code', { id: 'replay-delivery-id' }, newId), '. Refresh the log to follow it.'));
        announce(`Replayed as delivery ${newId}.`);
      } catch (err) { errors.show(err); }
    });
  }

  function drawLog(focusMore) {
    const more = page < totalPages
      ? h('button', { type: 'button', class: 'btn btn-secondary', id: 'load-more' }, 'Load more')
      : null;
    if (more) more.addEventListener('click', () => busy(more, () => loadLog(page + 1)));
    replace(logBox,
      h('p', { class: 'pager-info' }, `${rows.length} of ${total} deliveries shown`),
      table({
        caption: { text: 'Deliveries, newest first', hidden: true },
        empty: 'No deliveries match.',
        rows,
        columns: [
          { label: 'Delivery', cell: (d) => code(d.id) },
          { label: 'Event', cell: (d) => d.event },
          { label: 'Status', cell: (d) => h('span', {}, badge(d.status, STATUS_KIND[d.status]), d.lastError ? h('span', { class: 'reason block' }, d.lastError) : null) },
          { label: 'Attempts', cell: attemptsCell },
          { label: 'Created', cell: (d) => time(d.createdAt) },
          {
            label: 'Actions',
            cell: (d) => {
              const b = h('button', { type: 'button', class: 'btn btn-secondary btn-small', 'aria-label': `Replay ${d.id}` }, 'Replay');
              b.addEventListener('click', () => replay(d, b));
              return b;
            },
          },
          { label: 'Coalesced', cell: (d) => { const c = coalescedOf(d); return c === null ? dash() : String(c); } },
          { label: 'Last code', cell: (d) => (d.lastStatusCode ?? dash()) },
          { label: 'Entity', cell: (d) => (d.identifier ? code(d.identifier) : dash()) },
          { label: 'Replay of', cell: (d) => (d.replayOf ? code(d.replayOf) : dash()) },
        ],
      }),
      more);
    if (focusMore) (logBox.querySelector('#load-more') || logBox.querySelector('.table-wrap'))?.focus();
  }

  async function loadLog(p = 1) {
    logBox.setAttribute('aria-busy', 'true');
    try {
      const query = { limit: LOG_PAGE, page: p, status: statusSel.input.value, event: eventSel.input.value };
      const res = await api.get(`${path}/deliveries`, { query, signal });
      const items = res.result || [];
      rows = p === 1 ? items : rows.concat(items.filter((d) => !rows.some((r) => r.id === d.id)));
      page = p;
      totalPages = res.pagination ? res.pagination.totalPages : 1;
      total = res.pagination ? res.pagination.totalResults : rows.length;
      drawLog(p > 1);
    } catch (err) {
      errors.show(err);
    } finally {
      logBox.setAttribute('aria-busy', 'false');
    }
  }

  filters.addEventListener('submit', (e) => { e.preventDefault(); loadLog(1); });
  refresh.addEventListener('click', () => busy(refresh, async () => {
    await loadLog(1);
    announce(`Delivery log refreshed: ${total} ${total === 1 ? 'delivery' : 'deliveries'}.`);
  }));

  // --- first draw
  const res = await api.get(path, { signal });
  hook = res.result;
  ctx.setTitle('Webhook subscription');
  drawSummary();
  replace(root,
    h('p', {}, h('a', { href: '#/webhooks' }, '← All subscriptions')),
    errors.el,
    summary,
    h('section', { class: 'panel', 'aria-labelledby': 'actions-h' },
      h('h2', { id: 'actions-h' }, 'Actions'),
      h('div', { class: 'row wrap-row' }, testButton, toggleButton, deleteButton),
      verifyForm,
      rotateForm,
      output),
    editBox,
    h('section', { 'aria-labelledby': 'log-h' }, h('h2', { id: 'log-h' }, 'Delivery log'), filters, logBox));
  const typesLoaded = Promise.all([loadEventTypes(signal), filterChoices(signal)]).then(([types, choices]) => {
    eventTypes = types;
    filterOffer = choices;
    const names = [...new Set([...types.map((t) => t.name), 'webhook.test', 'webhook.verification'])].sort();
    for (const n of names) eventSel.input.append(option(n));
    drawEdit();
  }).catch((err) => errors.show(err));
  await Promise.all([loadLog(1), typesLoaded]);
}
