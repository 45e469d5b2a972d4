//! Splits a stream of bytes into NDJSON lines, remembering where each ends, so that an
//! import can checkpoint "every line before byte N is done" and resume there.

/// One line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based physical line number (blank lines count).
    pub number: u64,
    /// Byte offset just after the line (its newline included).
    pub end: u64,
    /// The text without its line ending; `None` when the line was longer than the limit or
    /// not UTF-8.
    pub text: Option<String>,
}

impl Line {
    pub fn is_blank(&self) -> bool {
        self.text.as_deref().is_some_and(|t| t.trim().is_empty())
    }
}

/// Feeds chunks in, takes complete lines out.
#[derive(Debug)]
pub struct Splitter {
    buf: Vec<u8>,
    /// Offset of `buf[0]` in the file.
    start: u64,
    /// Lines completed so far.
    number: u64,
    max_line: usize,
    /// The current line passed `max_line`: its bytes are dropped until its newline.
    oversized: bool,
}

impl Splitter {
    /// A splitter that starts at byte `offset`, after line `line`.
    pub fn new(offset: u64, line: u64, max_line: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: offset,
            number: line,
            max_line,
            oversized: false,
        }
    }

    /// The complete lines `chunk` finishes.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            let (head, tail) = rest.split_at(i + 1);
            self.take(&head[..i], head.len(), &mut out);
            rest = tail;
        }
        if !rest.is_empty() {
            if self.oversized || self.buf.len() + rest.len() > self.max_line {
                self.start += (self.buf.len() + rest.len()) as u64;
                self.buf.clear();
                self.oversized = true;
            } else {
                self.buf.extend_from_slice(rest);
            }
        }
        out
    }

    /// The last line, when the file does not end with a newline.
    pub fn finish(mut self) -> Option<Line> {
        if self.buf.is_empty() && !self.oversized {
            return None;
        }
        let mut out = Vec::new();
        self.take(&[], 0, &mut out);
        out.pop()
    }

    fn take(&mut self, head: &[u8], consumed: usize, out: &mut Vec<Line>) {
        let len = self.buf.len() + consumed;
        let text = if self.oversized || self.buf.len() + head.len() > self.max_line {
            None
        } else {
            self.buf.extend_from_slice(head);
            let bytes = self.buf.strip_suffix(b"\r").unwrap_or(&self.buf);
            String::from_utf8(bytes.to_vec()).ok()
        };
        self.number += 1;
        self.start += len as u64;
        out.push(Line {
            number: self.number,
            end: self.start,
            text,
        });
        self.buf.clear();
        self.oversized = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<(u64, u64, Option<&str>)> {
        lines
            .iter()
            .map(|l| (l.number, l.end, l.text.as_deref()))
            .collect()
    }

    #[test]
    fn lines_across_chunks_with_offsets() {
        let mut s = Splitter::new(0, 0, 100);
        let mut all = s.push(b"{\"a\":1}\n{\"b\"");
        all.extend(s.push(b":2}\r\n\n{\"c\":3}"));
        all.extend(s.finish());
        assert_eq!(
            texts(&all),
            vec![
                (1, 8, Some("{\"a\":1}")),
                (2, 17, Some("{\"b\":2}")),
                (3, 18, Some("")),
                (4, 25, Some("{\"c\":3}")),
            ]
        );
        assert!(all[2].is_blank());
    }

    #[test]
    fn resumes_from_a_checkpoint() {
        let file = b"one\ntwo\nthree\n";
        let mut first = Splitter::new(0, 0, 100);
        let lines = first.push(&file[..6]);
        assert_eq!(texts(&lines), vec![(1, 4, Some("one"))]);
        let mut again = Splitter::new(4, 1, 100);
        let lines = again.push(&file[4..]);
        assert_eq!(
            texts(&lines),
            vec![(2, 8, Some("two")), (3, 14, Some("three"))]
        );
        assert_eq!(again.finish(), None);
    }

    #[test]
    fn oversized_lines_are_dropped_but_counted() {
        let mut s = Splitter::new(0, 0, 4);
        let mut all = s.push(b"abcdefgh");
        all.extend(s.push(b"ij\nok\nxxxxxx"));
        all.extend(s.finish());
        assert_eq!(
            texts(&all),
            vec![(1, 11, None), (2, 14, Some("ok")), (3, 20, None)]
        );
    }
}
