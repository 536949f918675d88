// A launch from a learning platform (LTI) lands on `#/leaderboard?discipline=<id>`:
// the discipline a course's link names (docs/platforms.md, "Launch").

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The discipline the hash names (`?discipline=<uuid>`), or null. */
export function disciplineFromHash(hash: string): string | null {
  const query = hash.split('?')[1];
  if (!query) return null;
  const wanted = new URLSearchParams(query).get('discipline');
  return wanted && UUID.test(wanted) ? wanted.toLowerCase() : null;
}
