// "Did you mean": the nearest known words to a mistyped one, by edit distance.
import leven from 'leven';

/** The candidates within a few edits of `word` (one for a short word, else a third of its length and at least 2), nearest first; a prefix counts as near. */
export function nearest(word: string, candidates: Iterable<string>, max = 3): string[] {
  const limit = word.length <= 3 ? 1 : Math.max(2, Math.floor(word.length / 3));
  return [...new Set(candidates)]
    .map((candidate) => ({
      candidate,
      distance: candidate.startsWith(word) || word.startsWith(candidate) ? 1 : leven(word, candidate),
    }))
    .filter(({ distance }) => distance <= limit)
    .sort((a, b) => a.distance - b.distance || a.candidate.localeCompare(b.candidate))
    .slice(0, max)
    .map(({ candidate }) => candidate);
}

/** `; did you mean vm?` (or nothing when nothing is near). */
export function didYouMean(word: string, candidates: Iterable<string>, render: (candidate: string) => string = (text) => text): string {
  const near = nearest(word, candidates);
  if (near.length === 0) return '';
  return `; did you mean ${near.map(render).join(' or ')}?`;
}
