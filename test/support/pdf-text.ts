// The text of a PDF as pdfkit writes it (Flate-compressed content streams, strings as hex in TJ
// arrays, WinAnsi encoding): enough to read an invoice back without a PDF library.
import { inflateSync } from 'node:zlib';

// WinAnsi is Windows-1252: Latin-1 but for 0x80-0x9F, where it has €, dashes and quotes.
const winAnsi = new TextDecoder('windows-1252');

export function pdfText(pdf: Buffer): string {
  const source = pdf.toString('latin1');
  const lines: string[] = [];
  const streams = /stream\r?\n/g;
  let match: RegExpExecArray | null;
  while ((match = streams.exec(source))) {
    const start = match.index + match[0].length;
    const end = source.indexOf('endstream', start);
    let content: string;
    try {
      content = inflateSync(pdf.subarray(start, end)).toString('latin1');
    } catch {
      continue;
    }
    for (const array of content.matchAll(/\[(.*?)\]\s*TJ/g)) {
      const text = [...array[1]!.matchAll(/<([0-9a-fA-F]*)>/g)].map((hex) => winAnsi.decode(Buffer.from(hex[1]!, 'hex'))).join('');
      lines.push(text);
    }
  }
  return lines.join('\n');
}
