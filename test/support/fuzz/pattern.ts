// Random strings that match a regular expression: the subset the contract's `pattern`s use
// (literals, escapes, classes and negated classes, groups, alternation, quantifiers, anchors).
import type { Random } from './random.ts';

type Node =
  | { kind: 'sequence'; items: Node[] }
  | { kind: 'alternation'; options: Node[] }
  | { kind: 'repeat'; node: Node; min: number; max: number | undefined }
  | { kind: 'chars'; ranges: Array<[number, number]>; negated: boolean }
  | { kind: 'empty' };

/**
 * Characters a negated class or `.` draws from: printable ASCII, and a few beyond it that
 * often trip code up (accented letters, a non-breaking space, CJK, an emoji outside the BMP).
 */
const UNIVERSE: number[] = [
  ...Array.from({ length: 0x7f - 0x20 }, (_, index) => 0x20 + index),
  0xe9,
  0xfc,
  0xdf,
  0xa0,
  0x4e2d,
  0x6587,
  0x1f600,
  0x2603,
];

export class PatternGenerator {
  private readonly cache = new Map<string, Node>();

  /**
   * A string matching `pattern`. Unbounded repetitions repeat up to `stretch` times, so that a
   * pattern such as `[A-Za-z0-9+/]+` can reach a schema's minLength.
   */
  generate(pattern: string, random: Random, stretch = 8): string {
    let tree = this.cache.get(pattern);
    if (!tree) {
      tree = new Parser(pattern).parse();
      this.cache.set(pattern, tree);
    }
    return emit(tree, random, stretch);
  }
}

function emit(node: Node, random: Random, stretch: number): string {
  switch (node.kind) {
    case 'empty':
      return '';
    case 'sequence':
      return node.items.map((item) => emit(item, random, stretch)).join('');
    case 'alternation':
      return emit(random.pick(node.options), random, stretch);
    case 'repeat': {
      const max = node.max ?? node.min + stretch;
      // Mostly short, sometimes as long as allowed: both ends of a length range matter.
      const count = random.chance(0.2) ? max : random.int(node.min, Math.min(max, node.min + 6));
      let text = '';
      for (let index = 0; index < count; index++) text += emit(node.node, random, stretch);
      return text;
    }
    case 'chars': {
      const inRanges = (code: number) => node.ranges.some(([low, high]) => code >= low && code <= high);
      if (node.negated) return String.fromCodePoint(random.pick(UNIVERSE.filter((code) => !inRanges(code))));
      const [low, high] = random.pick(node.ranges);
      return String.fromCodePoint(random.int(low, high));
    }
  }
}

const DIGIT: Array<[number, number]> = [[0x30, 0x39]];
const WORD: Array<[number, number]> = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x61, 0x7a],
  [0x5f, 0x5f],
];
const SPACE: Array<[number, number]> = [
  [0x09, 0x0d],
  [0x20, 0x20],
];

class Parser {
  private position = 0;

  private readonly source: string;

  constructor(source: string) {
    this.source = source;
  }

  parse(): Node {
    const node = this.alternation();
    if (this.position < this.source.length)
      throw new Error(`pattern ${this.source}: unexpected ${this.source[this.position]} at ${this.position}`);
    return node;
  }

  private peek(): string | undefined {
    return this.source[this.position];
  }

  private alternation(): Node {
    const options = [this.sequence()];
    while (this.peek() === '|') {
      this.position++;
      options.push(this.sequence());
    }
    return options.length === 1 ? options[0]! : { kind: 'alternation', options };
  }

  private sequence(): Node {
    const items: Node[] = [];
    for (let char = this.peek(); char !== undefined && char !== '|' && char !== ')'; char = this.peek()) {
      if (char === '^' || char === '$') {
        this.position++;
        continue;
      }
      items.push(this.quantified(this.atom()));
    }
    return items.length === 0 ? { kind: 'empty' } : { kind: 'sequence', items };
  }

  private atom(): Node {
    const char = this.source[this.position++]!;
    if (char === '(') {
      if (this.source.startsWith('?:', this.position)) this.position += 2;
      const inner = this.alternation();
      if (this.source[this.position++] !== ')') throw new Error(`pattern ${this.source}: unclosed group`);
      return inner;
    }
    if (char === '[') return this.charClass();
    if (char === '.') return { kind: 'chars', ranges: [[0x0a, 0x0a]], negated: true };
    if (char === '\\') return this.escape();
    const code = char.codePointAt(0)!;
    return { kind: 'chars', ranges: [[code, code]], negated: false };
  }

  /** After a backslash: a class escape or one literal character. */
  private escape(): Node {
    const ranges = this.escapeRanges();
    if ('negated' in ranges) return { kind: 'chars', ranges: ranges.ranges, negated: ranges.negated };
    return { kind: 'chars', ranges: [[ranges.code, ranges.code]], negated: false };
  }

  private escapeRanges(): { code: number } | { ranges: Array<[number, number]>; negated: boolean } {
    const char = this.source[this.position++]!;
    switch (char) {
      case 'd':
        return { ranges: DIGIT, negated: false };
      case 'D':
        return { ranges: DIGIT, negated: true };
      case 'w':
        return { ranges: WORD, negated: false };
      case 'W':
        return { ranges: WORD, negated: true };
      case 's':
        return { ranges: SPACE, negated: false };
      case 'S':
        return { ranges: SPACE, negated: true };
      case 'x': {
        const code = Number.parseInt(this.source.slice(this.position, this.position + 2), 16);
        this.position += 2;
        return { code };
      }
      case 'u': {
        const code = Number.parseInt(this.source.slice(this.position, this.position + 4), 16);
        this.position += 4;
        return { code };
      }
      case 'n':
        return { code: 0x0a };
      case 't':
        return { code: 0x09 };
      case 'r':
        return { code: 0x0d };
      default:
        return { code: char.codePointAt(0)! };
    }
  }

  private charClass(): Node {
    const negated = this.peek() === '^';
    if (negated) this.position++;
    const ranges: Array<[number, number]> = [];
    // A negated class inside a class ([\s\S]) adds everything outside it.
    let complement = false;
    while (this.peek() !== ']') {
      if (this.peek() === undefined) throw new Error(`pattern ${this.source}: unclosed class`);
      const low = this.classAtom();
      if ('ranges' in low) {
        if (low.negated) complement = true;
        else ranges.push(...low.ranges);
        continue;
      }
      if (this.peek() === '-' && this.source[this.position + 1] !== ']') {
        this.position++;
        const high = this.classAtom();
        if ('ranges' in high) throw new Error(`pattern ${this.source}: a range ending in a class`);
        ranges.push([low.code, high.code]);
      } else {
        ranges.push([low.code, low.code]);
      }
    }
    this.position++;
    if (complement) {
      // [\s\S] and the like: any character at all.
      return negated ? { kind: 'chars', ranges: [[0, 0x10ffff]], negated: true } : { kind: 'chars', ranges: [[0, -1]], negated: true };
    }
    return { kind: 'chars', ranges, negated };
  }

  private classAtom(): { code: number } | { ranges: Array<[number, number]>; negated: boolean } {
    const char = this.source[this.position++]!;
    if (char === '\\') return this.escapeRanges();
    return { code: char.codePointAt(0)! };
  }

  private quantified(node: Node): Node {
    const char = this.peek();
    let min: number;
    let max: number | undefined;
    if (char === '?') [min, max] = [0, 1];
    else if (char === '*') [min, max] = [0, undefined];
    else if (char === '+') [min, max] = [1, undefined];
    else if (char === '{') {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.position));
      if (!match) return node;
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === '' ? undefined : Number(match[3]);
      this.position += match[0].length - 1;
    } else return node;
    this.position++;
    return this.quantified({ kind: 'repeat', node, min, max });
  }
}
