// The dashboard's deploy form: the image streamed by XMLHttpRequest (upload progress) as the
// raw body of PUT /api/v1/unikernels/{name}, the configuration as create's query parameters.

import { authHeaders, enc, HERE, type Target, urlOf } from './api.js';
import { byId, clear, el } from './dom.js';
import type { Block, Policy } from './types.js';

/** Fills the choices the caller's delegation offers: its CPUs, bridges and free block devices. */
export function fillDeployChoices(own: Policy | undefined, blocks: readonly Block[]): void {
  const form = byId<HTMLFormElement>('deploy-form');
  const cpu = form.elements.namedItem('cpu') as HTMLSelectElement;
  const current = cpu.value;
  clear(cpu);
  cpu.append(el('option', { value: '' }, 'any allowed'));
  for (const id of own?.cpuids ?? []) cpu.append(el('option', { value: String(id) }, `CPU ${id}`));
  cpu.value = current;
  const nets = byId('deploy-nets');
  const wantedNets = (own?.bridges ?? []).join(',');
  if (nets.dataset.bridges !== wantedNets) {
    nets.dataset.bridges = wantedNets;
    nets.replaceChildren(el('legend', {}, 'Networks'));
    (own?.bridges ?? []).forEach((bridge, i) => {
      nets.append(
        el(
          'label',
          { class: 'check' },
          el('input', { type: 'checkbox', name: 'net', value: bridge }),
          `${bridge} as `,
          el('input', { name: `netif-${bridge}`, value: i === 0 ? 'service' : bridge, size: '10' }),
        ),
      );
    });
    if ((own?.bridges ?? []).length === 0) nets.append(el('p', {}, 'The delegation has no bridges.'));
  }
  const devices = byId('deploy-blocks');
  const free = blocks.filter((b) => !b.inUse);
  const wantedBlocks = free.map((b) => b.name).join(',');
  if (devices.dataset.blocks !== wantedBlocks) {
    devices.dataset.blocks = wantedBlocks;
    devices.replaceChildren(el('legend', {}, 'Block devices'));
    for (const b of free) {
      devices.append(
        el(
          'label',
          { class: 'check' },
          el('input', { type: 'checkbox', name: 'block', value: b.name }),
          `${b.name} (${b.size} MiB) as `,
          el('input', { name: `device-${b.name}`, value: b.name, size: '10' }),
        ),
      );
    }
    if (free.length === 0) devices.append(el('p', {}, 'No free block devices.'));
  }
}

/** The query of create (src/web/create.ts) from the form. */
export function deployQuery(form: HTMLFormElement): URLSearchParams {
  const data = new FormData(form);
  const query = new URLSearchParams();
  query.set('mem', String(data.get('mem')));
  const cpu = String(data.get('cpu') ?? '');
  if (cpu !== '') query.append('cpu', cpu);
  for (const bridge of data.getAll('net'))
    query.append('net', `${String(data.get(`netif-${String(bridge)}`))}:${String(bridge)}`);
  for (const block of data.getAll('block'))
    query.append('block', `${String(data.get(`device-${String(block)}`))}:${String(block)}`);
  for (const line of String(data.get('args') ?? '').split('\n'))
    if (line.trim() !== '') query.append('arg', line.trim());
  if (data.get('restart') !== null) query.set('restart-on-fail', 'true');
  if (data.get('force') !== null) query.set('force', 'true');
  return query;
}

/** Sends the form's image as a create on `target`; resolves with the status and the reply's text. */
export function upload(
  form: HTMLFormElement,
  onProgress: (fraction: number) => void,
  target: Target = HERE,
): Promise<{ status: number; body: string }> {
  const data = new FormData(form);
  const url = `/api/v1/unikernels/${enc(String(data.get('name')))}?${deployQuery(form).toString()}`;
  return sendImage('PUT', url, data.get('image') as File, onProgress, target);
}

/** The nodes a deploy can go to (those that answered), keeping the one chosen. */
export function fillDeployNodes(nodes: readonly { readonly id: string; readonly label: string }[]): void {
  const select = byId<HTMLSelectElement>('deploy-node');
  const current = select.value;
  const wanted = nodes.map((n) => n.id).join(',');
  if (select.dataset.nodes !== wanted) {
    select.dataset.nodes = wanted;
    select.replaceChildren(...nodes.map((n) => el('option', { value: n.id }, n.label)));
    if (nodes.some((n) => n.id === current)) select.value = current;
  }
}

/**
 * An image as the raw body of `method url` on `target`, with upload progress and the CSRF token
 * (this node) or the bearer token (another).
 */
export function sendImage(
  method: string,
  url: string,
  image: File,
  onProgress: (fraction: number) => void,
  target: Target = HERE,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, urlOf(target, url));
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    for (const [header, value] of Object.entries(authHeaders(target, method)))
      xhr.setRequestHeader(header, value);
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    });
    xhr.addEventListener('load', () => resolve({ status: xhr.status, body: xhr.responseText }));
    xhr.addEventListener('error', () =>
      resolve({ status: 0, body: '{"error":{"code":"E_WEB_DASHBOARD","message":"the upload failed"}}' }),
    );
    xhr.send(image);
  });
}
