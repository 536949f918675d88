import { describe, expect, it } from 'vitest';
import { organizationFromSearch } from './views/email-link';

describe('e-mail me a link', () => {
  it('takes the organization from ?org= only when it is a UUID', () => {
    expect(organizationFromSearch('?org=0193A6F2-7C1E-7A52-9D3B-5E2F1A7C4B10')).toBe('0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b10');
    expect(organizationFromSearch('?x=1&org=%200193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b10%20')).toBe('0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b10');
    expect(organizationFromSearch('?org=not-a-uuid')).toBe('');
    expect(organizationFromSearch('')).toBe('');
  });
});
