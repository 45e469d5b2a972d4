// API keys: GET /api-keys (paged), POST /api-keys (the key shown once), DELETE
// /api-keys/{id} after a confirmation dialog.

import * as api from '../api.js';
import {
  h, replace, announce, errorArea, table, pager, field, checkbox, busy, secretBox,
  confirmDialog, time, badge, code, focusIn,
} from '../ui.js';

const SCOPES = [
  { name: 'catalog:read', hint: 'Read products, variants, SKUs, assets and attributes.' },
  { name: 'catalog:write', hint: 'Create and change catalog data; imports.' },
  { name: 'settings:manage', hint: 'Manage API keys, webhooks and console sign-in links.' },
];
const PAGE_SIZE = 50;

export default async function keysPage(ctx) {
  const { root, signal } = ctx;
  const errors = errorArea();
  const created = h('div', { id: 'new-key' });
  const listBox = h('div', { id: 'keys-list', 'aria-busy': 'true' });
  let page = 1;

  // --- the create form
  const name = field('Name', { name: 'name', required: true, maxlength: '255', autocomplete: 'off' },
    { hint: 'What the key is for, such as “CI reader”.' });
  const boxes = SCOPES.map((s) => {
    const held = ctx.can(s.name);
    return checkbox(s.name, { name: 'scopes', value: s.name, disabled: !held },
      held ? s.hint : `${s.hint} This session does not hold it, so it cannot grant it.`);
  });
  const submit = h('button', { type: 'submit', class: 'btn' }, 'Create key');
  const formErrors = errorArea();
  const form = h('form', { class: 'panel form', id: 'create-key', 'aria-labelledby': 'create-key-h', novalidate: true },
    h('h2', { id: 'create-key-h' }, 'Create an API key'),
    formErrors.el,
    name.wrap,
    h('fieldset', {}, h('legend', {}, 'Scopes'), boxes.map((b) => b.wrap)),
    h('div', { class: 'actions' }, submit));

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formErrors.clear();
    const scopes = boxes.filter((b) => b.input.checked).map((b) => b.input.value);
    const keyName = name.input.value.trim();
    if (!keyName) {
      formErrors.show(new Error('Give the key a name.'));
      name.input.focus();
      return;
    }
    if (!scopes.length) {
      formErrors.show(new Error('Choose at least one scope.'));
      boxes.find((b) => !b.input.disabled)?.input.focus();
      return;
    }
    await busy(submit, async () => {
      try {
        const res = await api.post('api-keys', { name: keyName, scopes }, { signal });
        const key = res.result;
        replace(created, secretBox({
          heading: `New key “${key.name}”`,
          label: 'API key',
          value: key.key || '',
          testId: 'new-key-value',
          note: 'Copy this key now: it will not be shown again. Only a hash of it is stored.',
        }));
        form.reset();
        announce(`Key “${key.name}” created. Copy it now: it will not be shown again.`);
        created.querySelector('input').focus();
        page = 1;
        await load();
      } catch (err) {
        formErrors.show(err);
      }
    });
  });

  // --- the list
  async function revoke(key, button) {
    const ok = await confirmDialog({
      title: `Revoke “${key.name}”?`,
      message: 'Calls with this key are refused at once by this service and everywhere within a minute. This cannot be undone.',
      confirmLabel: 'Revoke key',
    });
    if (!ok) return;
    await busy(button, async () => {
      try {
        await api.del(`api-keys/${api.seg(key.id)}`, { signal });
        announce(`Key “${key.name}” revoked.`);
        await load();
        root.querySelector('#keys-h')?.focus();
      } catch (err) {
        errors.show(err);
      }
    });
  }

  async function load() {
    listBox.setAttribute('aria-busy', 'true');
    errors.clear();
    try {
      const res = await api.get('api-keys', { query: { limit: PAGE_SIZE, page }, signal });
      const keys = res.result || [];
      replace(listBox,
        table({
          caption: { text: 'API keys of the organization', hidden: true },
          empty: 'No API keys yet.',
          rows: keys,
          columns: [
            { label: 'Name', cell: (k) => k.name },
            { label: 'Scopes', cell: (k) => h('span', { class: 'tags' }, (k.scopes || []).map((s) => badge(s))) },
            { label: 'Created', cell: (k) => time(k.createdAt) },
            { label: 'Last used', cell: (k) => (k.lastUsedAt ? time(k.lastUsedAt) : h('span', { class: 'muted' }, 'Never')) },
            { label: 'ID', cell: (k) => code(k.id) },
            {
              label: 'Actions',
              cell: (k) => {
                const b = h('button', { type: 'button', class: 'btn btn-danger btn-small', 'aria-label': `Revoke ${k.name}` }, 'Revoke');
                b.addEventListener('click', () => revoke(k, b));
                return b;
              },
            },
          ],
        }),
        pager(res.pagination, async (p) => { page = p; await load(); focusIn(listBox); }, 'keys'));
    } catch (err) {
      errors.show(err);
    } finally {
      listBox.setAttribute('aria-busy', 'false');
    }
  }

  replace(root,
    h('p', { class: 'lead' }, 'Keys authenticate calls to the Catalog API (', code('Authorization: Bearer …'), '). A key is shown once, when it is created.'),
    errors.el,
    created,
    form,
    h('section', { 'aria-labelledby': 'keys-h' }, h('h2', { id: 'keys-h', tabindex: '-1' }, 'Keys'), listBox));
  await load();
}
