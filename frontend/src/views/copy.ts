// "Copy" next to a value an admin pastes elsewhere (the SCIM base URL and token, the
// SSO redirect URI): the clipboard when the browser allows it, else the text selected
// so that Ctrl+C takes it.

import { h } from '../dom';
import type { Ctx } from '../context';

function selectText(el: HTMLElement): void {
  if (el instanceof HTMLTextAreaElement || el instanceof HTMLInputElement) {
    el.focus();
    el.select();
    return;
  }
  const range = document.createRange();
  range.selectNodeContents(el);
  const selection = window.getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
}

export function copyButton(ctx: Ctx, what: string, source: HTMLElement, testid: string): HTMLButtonElement {
  const button = h('button', { type: 'button', class: 'small', 'data-testid': testid, 'aria-label': `Copy the ${what}` }, 'Copy');
  button.addEventListener('click', () => {
    const text = source instanceof HTMLTextAreaElement || source instanceof HTMLInputElement ? source.value : (source.textContent ?? '');
    void (async () => {
      try {
        await navigator.clipboard.writeText(text);
        if (ctx.isCurrent()) ctx.notify(`The ${what} is on the clipboard.`);
      } catch {
        selectText(source);
        if (ctx.isCurrent()) ctx.notify(`The ${what} is selected: press Ctrl+C (⌘C) to copy it.`);
      }
    })();
  });
  return button;
}
