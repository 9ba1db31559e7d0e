// The Petrel dashboard: sign in with a token, then every unikernel the token's
// delegation may see on this node and on every other node of the fleet (each node's own API,
// the same token), grouped by node, its detail, the delegation's policies as bars, a deploy form.

import { call, HERE, hasBearer, messageOf, type Reply, setBearer, setCsrf, type Target } from './api.js';
import { fillDeployChoices, fillDeployNodes, sendImage, upload } from './deploy.js';
import { hideDetail, showDetail, shownName, shownTarget } from './detail.js';
import { byId, clear, el } from './dom.js';
import type { Block, Exit, FleetNode, Policy, Session, Unikernel } from './types.js';

const REFRESH_MS = 10_000;

/** One node's part of the page: what runs there under the delegation, or why it is not known. */
interface Group {
  readonly node: FleetNode;
  readonly target: Target;
  readonly unikernels: readonly Unikernel[];
  readonly exits: ReadonlyMap<string, Exit>;
  /** Its block devices (the deploy form offers the free ones of the node chosen). */
  readonly blocks: readonly Block[];
  readonly error: string | null;
}

let groups: Group[] = [];
let ownPolicy: Policy | undefined;
let refreshTimer: number | null = null;

function showSignIn(message = ''): void {
  if (refreshTimer !== null) window.clearInterval(refreshTimer);
  refreshTimer = null;
  hideDetail();
  setCsrf(null);
  setBearer(null);
  byId('app').hidden = true;
  byId('sign-out').hidden = true;
  byId('who').textContent = '';
  byId('sign-in').hidden = false;
  byId('sign-in-error').textContent = message;
}

function showApp(session: Session): void {
  setCsrf(session.csrf);
  byId('sign-in').hidden = true;
  byId('app').hidden = false;
  byId('sign-out').hidden = false;
  byId('who').textContent =
    `${session.delegation || '(root)'} — token ${session.token.name}, until ${new Date(session.token.expires).toLocaleString()}`;
  void refresh();
  refreshTimer = window.setInterval(() => void refresh(), REFRESH_MS);
}

/** Every page of the listing on `target`; a Reply when the token or session was refused (it says why). */
async function listAll(target: Target = HERE): Promise<Unikernel[] | Reply> {
  const all: Unikernel[] = [];
  let after: string | null = null;
  for (;;) {
    const query: string = after === null ? '?limit=1000' : `?limit=1000&after=${encodeURIComponent(after)}`;
    const reply = await call<{ items: Unikernel[]; next: string | null }>(
      'GET',
      `/api/v1/unikernels${query}`,
      undefined,
      target,
    );
    if (reply.status === 401) return reply;
    if (reply.status !== 200) throw new Error(messageOf(reply));
    all.push(...reply.body.items);
    if (reply.body.next === null) return all;
    after = reply.body.next;
  }
}

const exitsOf = (reply: Reply<{ items: Exit[] }>): Map<string, Exit> =>
  new Map(reply.status === 200 ? reply.body.items.map((e) => [e.name, e]) : []);

/**
 * Another node's part: its own API, with the token (it verifies it itself: a node that refuses
 * it is shown with its answer, not left out).
 */
async function remoteGroup(node: FleetNode): Promise<Group> {
  const target: Target = { id: node.id, origin: node.origin };
  const none = (error: string): Group => ({
    node,
    target,
    unikernels: [],
    exits: new Map(),
    blocks: [],
    error,
  });
  if (node.origin === null)
    return none('No web API reported: webListen is not set there, or the node has stopped.');
  if (!hasBearer())
    return none('The page was reloaded and forgot the token: sign out and in again to see this node.');
  try {
    const [list, exitReply, blocks] = await Promise.all([
      listAll(target),
      call<{ items: Exit[] }>('GET', '/api/v1/exits', undefined, target),
      call<{ items: Block[] }>('GET', '/api/v1/blocks', undefined, target),
    ]);
    if (!Array.isArray(list)) return none(messageOf(list));
    const free = blocks.status === 200 ? blocks.body.items : [];
    return { node, target, unikernels: list, exits: exitsOf(exitReply), blocks: free, error: null };
  } catch (e) {
    return none((e as Error).message);
  }
}

export async function refresh(): Promise<void> {
  try {
    const [policies, list, exitReply, blocks, fleet] = await Promise.all([
      call<{ items: Policy[] }>('GET', '/api/v1/policies'),
      listAll(),
      call<{ items: Exit[] }>('GET', '/api/v1/exits'),
      call<{ items: Block[] }>('GET', '/api/v1/blocks'),
      call<{ nodes: FleetNode[]; error: { message: string } | null }>('GET', '/api/v1/fleet'),
    ]);
    if (policies.status === 401 || !Array.isArray(list))
      return showSignIn('The session has ended: sign in again.');
    if (policies.status !== 200) throw new Error(messageOf(policies));
    const nodes = fleet.status === 200 ? fleet.body.nodes : [];
    const self = nodes.find((n) => n.self) ?? { id: location.host, origin: null, self: true, lastSeen: null };
    const others = await Promise.all(nodes.filter((n) => !n.self).map(remoteGroup));
    const blockList = blocks.status === 200 ? blocks.body.items : [];
    groups = [
      {
        node: self,
        target: HERE,
        unikernels: list,
        exits: exitsOf(exitReply),
        blocks: blockList,
        error: null,
      },
      ...others,
    ];
    ownPolicy = policies.body.items.find((p) => p.relative === '');
    renderPolicies(policies.body.items);
    renderList();
    fillDeployNodes(
      groups
        .filter((g) => g.error === null)
        .map((g) => ({ id: g.node.id, label: g.node.self ? `${g.node.id} (this one)` : g.node.id })),
    );
    fillDeployChoices(ownPolicy, deployGroup().blocks);
    const selected = shownName();
    const on = shownTarget();
    const group = groups.find((g) => g.target.id === on.id);
    const still = group?.unikernels.find((u) => u.name === selected);
    if (group !== undefined && still !== undefined)
      showDetail(still, group.exits.get(still.name), group.target);
    else if (selected !== null) hideDetail();
    byId('app-error').textContent =
      fleet.status === 200 && fleet.body.error !== null ? `Fleet registry: ${fleet.body.error.message}` : '';
  } catch (e) {
    byId('app-error').textContent = (e as Error).message;
  }
}

function bar(label: string, used: number, limit: number, unit = ''): HTMLElement {
  const fraction = limit > 0 ? Math.min(1, used / limit) : 1;
  const fill = el('div', { class: fraction >= 1 ? 'fill full' : 'fill' });
  // Through the CSSOM: the CSP (style-src 'self') refuses style attributes.
  fill.style.width = `${(fraction * 100).toFixed(1)}%`;
  return el(
    'div',
    { class: 'bar' },
    el('div', { class: 'label' }, `${label}: ${used}${unit} of ${limit}${unit}`),
    el(
      'div',
      {
        class: 'track',
        role: 'meter',
        'aria-valuemin': '0',
        'aria-valuemax': String(limit),
        'aria-valuenow': String(used),
      },
      fill,
    ),
  );
}

/** Each policy at or below the caller's delegation, with what runs under it against its limits. */
function renderPolicies(policies: readonly Policy[]): void {
  const box = byId('policy-bars');
  clear(box);
  for (const p of policies) {
    box.append(
      el(
        'div',
        { class: 'policy' },
        el('h3', {}, p.relative === '' ? `${p.path || '(root)'} (this delegation)` : p.path),
        bar('Unikernels', p.usage.unikernels, p.unikernels),
        bar('Memory', p.usage.memory, p.memory, ' MiB'),
        p.block === null ? null : bar('Block storage', p.usage.block, p.block, ' MiB'),
        el(
          'div',
          { class: 'label' },
          `CPUs ${p.cpuids.join(', ') || 'none'} (in use: ${p.usage.cpuids.join(', ') || 'none'}); bridges ${p.bridges.join(', ') || 'none'}`,
        ),
      ),
    );
  }
}

function renderList(): void {
  const box = byId('node-list');
  box.replaceChildren(...groups.map(renderGroup));
}

function renderGroup(group: Group): HTMLElement {
  const selected = shownName();
  const on = shownTarget();
  const rows = document.createDocumentFragment();
  for (const u of group.unikernels) {
    const exit = group.exits.get(u.name);
    const chosen = u.name === selected && on.id === group.target.id;
    const row = el(
      'tr',
      { class: chosen ? 'unikernel selected' : 'unikernel', 'data-name': u.name },
      el('td', {}, u.name),
      el('td', {}, u.state),
      el('td', {}, `${u.memory} MiB`),
      el('td', {}, String(u.cpus)),
      el('td', {}, exit === undefined ? '—' : `${exit.exit}, ${exit.restarts} restart(s)`),
    );
    row.addEventListener('click', () => {
      showDetail(u, group.exits.get(u.name), group.target);
      renderList();
    });
    rows.append(row);
  }
  const head = el('tr', {}, ...['Name', 'State', 'Memory', 'CPUs', 'Last exit'].map((h) => el('th', {}, h)));
  const table = el('table', {}, el('thead', {}, head), el('tbody', {}, rows));
  const title = group.node.self
    ? `Node ${group.node.id} (this one)`
    : `Node ${group.node.id}${group.node.origin === null ? '' : ` — ${group.node.origin}`}`;
  const body =
    group.error !== null
      ? el('p', { class: 'error node-error' }, group.error)
      : group.unikernels.length === 0
        ? el('p', {}, 'Nothing runs here under this delegation.')
        : table;
  return el(
    'div',
    { class: 'node', 'data-node': group.node.id },
    el('h3', {}, group.error === null ? `${title} — ${group.unikernels.length} running` : title),
    body,
  );
}

/** The node the deploy form is set to (this one when nothing else is chosen). */
function deployGroup(): Group {
  const chosen = byId<HTMLSelectElement>('deploy-node').value;
  return groups.find((g) => g.node.id === chosen) ?? (groups[0] as Group);
}

async function signIn(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const form = event.target as HTMLFormElement;
  const field = form.elements.namedItem('token') as HTMLTextAreaElement;
  const reply = await call<Session>('POST', '/api/v1/session', { token: field.value.trim() });
  if (reply.status !== 201) {
    byId('sign-in-error').textContent = messageOf(reply);
    return;
  }
  // Kept in memory for the fleet's other nodes (api.ts): a reload forgets it.
  setBearer(field.value.trim());
  field.value = '';
  showApp(reply.body);
}

async function deploy(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const form = event.target as HTMLFormElement;
  const progress = byId<HTMLProgressElement>('deploy-progress');
  const result = byId('deploy-result');
  progress.hidden = false;
  progress.value = 0;
  result.textContent = 'Uploading…';
  const group = deployGroup();
  const reply = await upload(
    form,
    (f) => {
      progress.value = f;
    },
    group.target,
  );
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(reply.body);
  } catch {
    parsed = null;
  }
  if (reply.status === 201) {
    progress.value = 1;
    const name = String((parsed as { name?: string } | null)?.name ?? '');
    result.textContent = `Created ${name}.`;
    await refresh();
    const now = groups.find((g) => g.target.id === group.target.id);
    const made = now?.unikernels.find((u) => u.name === name);
    if (now !== undefined && made !== undefined) {
      showDetail(made, now.exits.get(name), now.target);
      renderList();
    }
  } else {
    progress.hidden = true;
    result.textContent = messageOf({ status: reply.status, body: parsed });
  }
}

/**
 * Replace (POST …/replace): the new image, checked by petreld; the answer comes when the check is
 * over, kept (200) or rolled back to the previous image and configuration (409, saying why).
 */
async function replace(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const name = shownName();
  if (name === null) return;
  const form = event.target as HTMLFormElement;
  const data = new FormData(form);
  const query = new URLSearchParams();
  query.set(String(data.get('check')), String(data.get('target')));
  query.set('within', String(data.get('within')));
  const progress = byId<HTMLProgressElement>('replace-progress');
  const result = byId('replace-result');
  progress.hidden = false;
  progress.value = 0;
  result.textContent = 'Uploading, then checking…';
  const url = `/api/v1/unikernels/${encodeURIComponent(name)}/replace?${query.toString()}`;
  const reply = await sendImage(
    'POST',
    url,
    data.get('image') as File,
    (f) => {
      progress.value = f;
    },
    shownTarget(),
  );
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(reply.body);
  } catch {
    parsed = null;
  }
  const said = (parsed as { reply?: string } | null)?.reply;
  result.textContent =
    reply.status === 200 && said !== undefined ? said : messageOf({ status: reply.status, body: parsed });
  await refresh();
}

/** Destroy asks twice: the first click arms the button for five seconds. */
function armed(button: HTMLButtonElement, label: string): boolean {
  if (button.dataset.armed === 'yes') return true;
  button.dataset.armed = 'yes';
  const before = button.textContent;
  button.textContent = label;
  window.setTimeout(() => {
    button.dataset.armed = '';
    button.textContent = before;
  }, 5000);
  return false;
}

async function change(method: string, suffix: string): Promise<void> {
  const name = shownName();
  if (name === null) return;
  const reply = await call(
    method,
    `/api/v1/unikernels/${encodeURIComponent(name)}${suffix}`,
    undefined,
    shownTarget(),
  );
  byId('app-error').textContent = reply.status === 200 ? '' : messageOf(reply);
  await refresh();
}

async function boot(): Promise<void> {
  byId<HTMLFormElement>('sign-in-form').addEventListener('submit', (e) => void signIn(e));
  byId<HTMLFormElement>('deploy-form').addEventListener('submit', (e) => void deploy(e));
  byId<HTMLFormElement>('replace-form').addEventListener('submit', (e) => void replace(e));
  byId('sign-out').addEventListener('click', async () => {
    await call('DELETE', '/api/v1/session');
    showSignIn();
  });
  byId('restart').addEventListener('click', () => void change('POST', '/restart'));
  byId('refresh').addEventListener('click', () => void refresh());
  byId('deploy-node').addEventListener('change', () => fillDeployChoices(ownPolicy, deployGroup().blocks));
  const destroy = byId<HTMLButtonElement>('destroy');
  destroy.addEventListener('click', () => {
    if (armed(destroy, 'Click again to destroy')) {
      destroy.dataset.armed = '';
      void change('DELETE', '');
    }
  });
  const session = await call<Session>('GET', '/api/v1/session');
  if (session.status === 200) showApp(session.body);
  else showSignIn();
}

void boot();
