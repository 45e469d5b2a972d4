// Webhooks: GET /webhooks (paged), GET /event-types (the topics, with descriptions and
// example payloads), POST /webhooks (an HTTPS URL, an SQS queue or an EventBridge bus; the
// secret shown once), PATCH /webhooks/{id} {enabled}. The destination, topic and
// changed-fields inputs and the status cells are shared with the detail page.

import * as api from '../api.js';
import {
  h, replace, announce, errorArea, table, pager, field, busy, secretBox, time, badge,
  jsonBlock, uid, focusIn,
} from '../ui.js';
import { hrefOf } from '../router.js';
import { filterBuilder, filterChoices } from './catalog.js';

const PAGE_SIZE = 50;

/** Every event type (GET /event-types, all pages). */
export function loadEventTypes(signal) {
  return api.getAll('event-types', { signal });
}

const ENTITY_LABELS = {
  product: 'Products', variant: 'Variants', sku: 'SKUs', bundle: 'Bundles',
  metaobject: 'Metaobjects', category: 'Categories', asset: 'Assets', webhook: 'Webhook',
};

/**
 * Checkboxes for the topics, grouped by entity, each with its description and example
 * payload; `selected` topics that the catalog does not list (such as `product.*`) are
 * shown checked under "Other topics". Returns {el, values(), setSelected(list)}.
 */
export function topicPicker(eventTypes, selected = [], legend = 'Topics') {
  const inputs = [];
  const groups = new Map();
  for (const t of eventTypes) {
    const entity = String(t.name).split('.')[0];
    if (!groups.has(entity)) groups.set(entity, []);
    groups.get(entity).push(t);
  }
  const known = new Set(eventTypes.map((t) => t.name));
  const others = selected.filter((s) => !known.has(s)).map((name) => ({ name, description: 'A topic pattern this subscription already has.' }));
  if (others.length) groups.set('other', others);

  const topicRow = (t) => {
    const id = uid('topic');
    const input = h('input', { type: 'checkbox', id, name: 'topics', value: t.name, checked: selected.includes(t.name), 'aria-describedby': `${id}-d` });
    inputs.push(input);
    return h('li', { class: 'topic' },
      h('div', { class: 'check' }, input, h('label', { for: id }, h('code', {}, t.name))),
      h('p', { class: 'hint', id: `${id}-d` }, t.description || ''),
      t.example ? h('details', { class: 'example' }, h('summary', {}, `Example payload of ${t.name}`), jsonBlock(t.example)) : null);
  };
  const el = h('fieldset', { class: 'topics' }, h('legend', {}, legend),
    eventTypes.length ? null : h('p', { class: 'hint' }, 'No event types could be loaded.'),
    [...groups.entries()].map(([entity, list]) => h('fieldset', { class: 'topic-group' },
      h('legend', {}, entity === 'other' ? 'Other topics' : (ENTITY_LABELS[entity] || entity)),
      h('ul', { class: 'topic-list' }, list.map(topicRow)))));
  return {
    el,
    values: () => inputs.filter((i) => i.checked).map((i) => i.value),
    focus: () => inputs[0]?.focus(),
  };
}

/**
 * The `changedFields` input: a comma-separated list of `name` and attribute selectors.
 * Returns {wrap, input, values()}: values() is the list, or null when empty (every update).
 */
export function changedFieldsInput(current = null) {
  const f = field('Changed fields (optional)', { name: 'changedFields', value: (current || []).join(', '), autocomplete: 'off', placeholder: 'name, product.color, sku.price_*' },
    { hint: 'Deliver an update only when one of these changed: name, or attribute selectors such as product.color or sku.price_*, comma-separated. Empty: every update. Creates and deletes are always delivered.' });
  const values = () => {
    const list = f.input.value.split(',').map((s) => s.trim()).filter(Boolean);
    return list.length ? list : null;
  };
  return { wrap: f.wrap, input: f.input, values };
}

/** The `payload` select: the notice alone, or with the changes. Returns {wrap, input}. */
export function payloadInput(current = 'thin') {
  const f = field('Payload', { name: 'payload' }, {
    tag: 'select',
    hint: 'With changes, each delivery also carries the old and new values of the name and attributes that changed (omitted past 200 KB).',
    options: [
      { value: 'thin', label: 'The notice (event and identifier)' },
      { value: 'changes', label: 'The notice and what changed' },
    ],
  });
  f.input.value = current || 'thin';
  return f;
}

/**
 * The `filter` inputs: the explorer's filter builder in a fieldset (`choices` of
 * filterChoices()). Returns {wrap, body()}: body() is the `filter` field (null when it has no
 * conditions) or an Error.
 */
export function filterInput(choices, current = null) {
  const b = filterBuilder(choices, {
    search: current && current.search, mode: current && current.searchMode,
    addId: 'add-filter-condition', modeId: 'filter-mode', modeName: 'filterMode',
  });
  const wrap = h('fieldset', { class: 'filter-fieldset', id: 'webhook-filter' },
    h('legend', {}, 'Filter (optional)'),
    h('p', { class: 'hint' }, 'Deliver only changes of products, variants or SKUs that match these conditions before or after the change; each delivery says whether the entity entered, stayed in or left the set. A key may name the event’s own level or an ancestor’s (product.* on SKU events). No conditions: every change.'),
    b.rowsBox, h('div', { class: 'row wrap-row' }, b.addButton), b.mode.wrap);
  const body = () => {
    const r = b.read();
    if (r instanceof Error) return r;
    return r.search ? { search: r.search, searchMode: r.mode } : null;
  };
  return { wrap, body };
}

/** The subscription's `filter` in words: its search and mode, or "every change". */
export function filterCell(w) {
  if (!w.filter) return 'Every change';
  return h('span', {}, h('code', { class: 'wrap' }, JSON.stringify(w.filter.search)), ` (${w.filter.searchMode})`);
}

/** The subscription's `changedFields`, or "every update". */
export function changedFieldsCell(w) {
  return w.changedFields && w.changedFields.length
    ? h('span', { class: 'tags' }, w.changedFields.map((f) => badge(f)))
    : 'Every update';
}

const DESTINATIONS = {
  https: { label: 'HTTPS endpoint', field: 'url', address: 'Endpoint URL', placeholder: 'https://example.com/hooks/catalog', hint: 'Deliveries are signed HTTP POSTs with a JSON body. Only public https addresses are allowed in production.' },
  sqs: { label: 'SQS queue', field: 'queueUrl', address: 'Queue URL', placeholder: 'https://sqs.eu-west-1.amazonaws.com/111122223333/catalog-events', hint: 'One message per delivery (FIFO queues: a message group per entity). The queue must be one this deployment may write to; it first gets a verification message with a token.' },
  eventbridge: { label: 'EventBridge bus', field: 'eventBusArn', address: 'Event bus ARN', placeholder: 'arn:aws:events:eu-west-1:111122223333:event-bus/catalog', hint: 'One event per delivery: source catalog.<organization>, detail-type the event. The bus must be one this deployment may write to; it first gets a verification event with a token.' },
};

/** The subscription's destination type (`https` for subscriptions that only have `url`). */
export function destinationType(w) {
  return (w.destination && w.destination.type) || 'https';
}

/** Where it delivers: the URL, queue URL or bus ARN. */
export function addressOf(w) {
  const d = w.destination || {};
  return w.url || d.url || d.queueUrl || d.eventBusArn || '';
}

/** The destination type's label and its address. */
export function destinationCell(w) {
  const t = destinationType(w);
  return h('span', {}, t === 'https' ? null : badge(DESTINATIONS[t]?.label || t), t === 'https' ? null : ' ', h('span', { class: 'wrap' }, addressOf(w)));
}

/**
 * The destination inputs: its type (fixed when `current` is given: a PATCH keeps it) and
 * its address. Returns {el, input, body()}: body() is `{url}` or `{destination}`.
 */
export function destinationInput(current = null) {
  const type = field('Destination', { name: 'destinationType', disabled: current ? true : undefined }, {
    tag: 'select',
    hint: current ? 'A subscription keeps its destination type.' : 'Where deliveries go: an HTTPS endpoint, an SQS queue or an EventBridge event bus.',
    options: Object.entries(DESTINATIONS).map(([value, d]) => ({ value, label: d.label })),
  });
  if (current) type.input.value = destinationType(current);
  const address = field(DESTINATIONS[type.input.value].address, { name: 'address', required: true, value: current ? addressOf(current) : '', autocomplete: 'off' }, { hint: ' ' });
  const label = address.wrap.querySelector('label');
  const hint = address.wrap.querySelector('.hint');
  const sync = () => {
    const d = DESTINATIONS[type.input.value];
    if (label) label.textContent = d.address;
    if (hint) hint.textContent = d.hint;
    address.input.placeholder = d.placeholder;
    address.input.type = d.field === 'eventBusArn' ? 'text' : 'url';
  };
  type.input.addEventListener('change', sync);
  sync();
  const body = () => {
    const t = type.input.value;
    const value = address.input.value.trim();
    return t === 'https' ? { url: value } : { destination: { type: t, [DESTINATIONS[t].field]: value } };
  };
  return { el: h('div', {}, type.wrap, address.wrap), input: address.input, body, type: () => type.input.value };
}

/** "Enabled", "Awaiting verification", or "Disabled" with the reason the API gives. */
export function statusCell(w) {
  const enabled = w.enabled !== false;
  if (w.status === 'pending_verification') {
    return h('span', {}, badge('Awaiting verification', 'warn'), enabled ? null : [' ', badge('Disabled', 'warn')]);
  }
  if (enabled) return badge('Enabled', 'ok');
  return h('span', {}, badge('Disabled', 'warn'), w.disabledReason ? h('span', { class: 'reason' }, ` ${w.disabledReason}`) : null);
}

/** [label, node] pairs of the endpoint's health (`GET /webhooks/{id}` gives it). */
export function healthPairs(w) {
  const health = w.health;
  if (!health || typeof health !== 'object') return [];
  const pairs = [['Health', badge(health.status === 'failing' ? 'Failing' : 'Healthy', health.status === 'failing' ? 'bad' : 'ok')]];
  if (health.failingSince) pairs.push(['Failing since', time(health.failingSince)]);
  if (health.consecutiveFailures) pairs.push(['Failed attempts in a row', String(health.consecutiveFailures)]);
  return pairs;
}

export default async function webhooksPage(ctx) {
  const { root, signal } = ctx;
  const errors = errorArea();
  const created = h('div', { id: 'new-webhook' });
  const listBox = h('div', { id: 'webhooks-list', 'aria-busy': 'true' });
  const formBox = h('div');
  let page = 1;

  async function toggle(w, button) {
    await busy(button, async () => {
      try {
        const enabled = w.enabled === false;
        await api.patch(`webhooks/${api.seg(w.id)}`, { enabled }, { signal });
        announce(`${addressOf(w)} ${enabled ? 'enabled' : 'disabled'}.`);
        await load();
      } catch (err) {
        errors.show(err);
      }
    });
  }

  async function load() {
    listBox.setAttribute('aria-busy', 'true');
    try {
      const res = await api.get('webhooks', { query: { limit: PAGE_SIZE, page }, signal });
      const hooks = res.result || [];
      replace(listBox,
        table({
          caption: { text: 'Webhook subscriptions', hidden: true },
          empty: 'No subscriptions yet.',
          rows: hooks,
          columns: [
            { label: 'Destination', class: 'wrap', cell: (w) => h('a', { href: hrefOf(['webhooks', w.id]) }, destinationCell(w)) },
            { label: 'Topics', cell: (w) => h('span', { class: 'tags' }, (w.topics || []).map((t) => badge(t))) },
            { label: 'Status', cell: statusCell },
            { label: 'Created', cell: (w) => time(w.createdAt) },
            {
              label: 'Actions',
              cell: (w) => {
                const on = w.enabled !== false;
                const b = h('button', { type: 'button', class: 'btn btn-secondary btn-small', 'aria-label': `${on ? 'Disable' : 'Enable'} ${addressOf(w)}` }, on ? 'Disable' : 'Enable');
                b.addEventListener('click', () => toggle(w, b));
                return h('div', { class: 'row' }, h('a', { class: 'btn btn-secondary btn-small', href: hrefOf(['webhooks', w.id]), 'aria-label': `Open ${addressOf(w)}` }, 'Open'), b);
              },
            },
          ],
        }),
        pager(res.pagination, async (p) => { page = p; await load(); focusIn(listBox); }, 'subscriptions'));
    } catch (err) {
      errors.show(err);
    } finally {
      listBox.setAttribute('aria-busy', 'false');
    }
  }

  function drawForm([eventTypes, choices]) {
    const url = destinationInput();
    const description = field('Description (optional)', { name: 'description', maxlength: '500' });
    const picker = topicPicker(eventTypes, []);
    const changed = changedFieldsInput();
    const payload = payloadInput();
    const filter = filterInput(choices);
    const submit = h('button', { type: 'submit', class: 'btn' }, 'Create subscription');
    const formErrors = errorArea();
    const form = h('form', { class: 'panel form', id: 'create-webhook', 'aria-labelledby': 'create-webhook-h', novalidate: true },
      h('h2', { id: 'create-webhook-h' }, 'Create a subscription'),
      formErrors.el, url.el, description.wrap, picker.el, filter.wrap, changed.wrap, payload.wrap,
      ctx.can('catalog:read') ? null : h('p', { class: 'note' }, 'Catalog topics also need the catalog:read scope, which this session does not hold.'),
      h('div', { class: 'actions' }, submit));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      formErrors.clear();
      const topics = picker.values();
      if (!url.input.value.trim()) {
        formErrors.show(new Error('Enter where deliveries go.'));
        url.input.focus();
        return;
      }
      if (!topics.length) {
        formErrors.show(new Error('Choose at least one topic.'));
        picker.focus();
        return;
      }
      const body = { ...url.body(), topics };
      if (description.input.value.trim()) body.description = description.input.value.trim();
      if (changed.values()) body.changedFields = changed.values();
      if (payload.input.value !== 'thin') body.payload = payload.input.value;
      const f = filter.body();
      if (f instanceof Error) { formErrors.show(f); return; }
      if (f) body.filter = f;
      await busy(submit, async () => {
        try {
          const res = await api.post('webhooks', body, { signal });
          const w = res.result;
          replace(created,
            w.secret ? secretBox({
              heading: 'Subscription created: its signing secret',
              label: 'Signing secret',
              value: w.secret,
              testId: 'webhook-secret',
              note: 'Copy the secret now: it will not be shown again. Verify each delivery’s signature with it (Standard Webhooks).',
            }) : null,
            w.status === 'pending_verification'
              ? h('p', { class: 'note', id: 'awaits-verification' }, 'It awaits verification: the destination got a webhook.verification message with a token. Enter the token on the subscription’s page; nothing else is delivered until then.')
              : null,
            h('p', {}, 'Subscription created. ', h('a', { href: hrefOf(['webhooks', w.id]), id: 'new-webhook-link' }, `Open ${addressOf(w)}`)));
          announce(`Subscription to ${addressOf(w)} created.`);
          form.reset();
          (created.querySelector('input') || created.querySelector('a')).focus();
          page = 1;
          await load();
        } catch (err) {
          formErrors.show(err);
        }
      });
    });
    replace(formBox, form);
  }

  replace(root,
    h('p', { class: 'lead' }, 'Subscriptions send signed HTTP POSTs to your endpoint, or messages to your SQS queue or EventBridge bus, when catalog data changes. Open one for its delivery log, test events and replays.'),
    errors.el,
    created,
    h('section', { 'aria-labelledby': 'hooks-h' }, h('h2', { id: 'hooks-h' }, 'Subscriptions'), listBox),
    formBox);
  const types = loadEventTypes(signal).catch((err) => { errors.show(err); return []; });
  // the filter builder's attributes (none without catalog:read: built-in fields only)
  const choices = filterChoices(signal);
  await Promise.all([load(), Promise.all([types, choices]).then(drawForm)]);
}
