// Tiny DOM builder: every text goes in as a text node, so nothing the API
// returns is ever parsed as HTML.

export type Child = Node | string | number | null | undefined | false | Child[];
type AttrValue = string | number | boolean | null | undefined;
export type Attrs = Record<string, AttrValue | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (typeof value === 'function') {
        el.addEventListener(key.replace(/^on/, '').toLowerCase(), value);
      } else if (value === true) {
        el.setAttribute(key, '');
      } else if (value !== false && value !== null && value !== undefined) {
        el.setAttribute(key === 'className' ? 'class' : key, String(value));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function replaceChildren(el: Element, ...children: Child[]): void {
  clear(el);
  append(el, children);
}

/** A horizontal bar with the ARIA progressbar semantics. */
export function progressBar(percent: number, label: string, testId?: string, extra?: Attrs): HTMLElement {
  const value = Math.max(0, Math.min(100, Number.isFinite(percent) ? percent : 0));
  const fill = h('div', { class: 'bar-fill' });
  // CSSOM (not a style attribute), which the Content-Security-Policy allows.
  fill.style.width = `${value}%`;
  return h(
    'div',
    {
      class: 'bar',
      role: 'progressbar',
      'aria-label': label,
      'aria-valuemin': 0,
      'aria-valuemax': 100,
      'aria-valuenow': Math.round(value),
      'data-testid': testId,
      ...extra,
    },
    fill,
  );
}

/** A scrollable wrapper for wide tables (keyboard-scrollable at phone width). */
export function tableWrap(label: string, table: HTMLTableElement): HTMLElement {
  return h('div', { class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: 0 }, table);
}
