// Building the dashboard's DOM from data: text goes in as text nodes only (never as HTML), so
// nothing a guest or a name holds can become markup or script.

type Child = Node | string | null;

/** An element with attributes set by setAttribute and children appended as nodes or text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  for (const child of children) if (child !== null) element.append(child);
  return element;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found as T;
}

export function clear(element: Element): void {
  element.replaceChildren();
}

export const mib = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MiB`;
