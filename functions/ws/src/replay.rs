//! The archive replay that opens a subscription, one page per subscribe: a subscribe to a long operation's
//! log must not read and post its whole archive in one invocation (memory, the Lambda's time limit, a
//! client flooded before it can say anything). A page is whole archive chunks up to [`PAGE_LINES`] lines (at
//! least one chunk); the `subscribed` frame's `more` tells the client to subscribe again from the next seq.

use strato_aws::log_io::{ArchiveChunk, list_archive, read_chunk};
use strato_model::ids::OperationId;
use strato_model::messages::{LogFrame, LogLine};
use strato_stream::logs::{MAX_FRAME_BYTES, encode_frames};

use crate::WsError;

/// At most this many archived lines per subscribe (unless one chunk alone holds more: a page is never empty
/// while the archive has lines). The runner writes chunks of up to 2,000 lines.
pub const PAGE_LINES: u64 = 5_000;

/// The operation's log archive.
pub(crate) trait Archive {
    /// The chunks holding lines ≥ `from_seq` in order, and the final seq once the archive is complete.
    async fn list(
        &self,
        op: &OperationId,
        from_seq: u64,
    ) -> Result<(Vec<ArchiveChunk>, Option<u64>), WsError>;
    /// A chunk's lines ≥ `from_seq`.
    async fn read(&self, chunk: &ArchiveChunk, from_seq: u64) -> Result<Vec<LogLine>, WsError>;
}

/// The subscriber's connection.
pub(crate) trait Frames {
    async fn post(&self, frame: &str) -> Result<(), WsError>;
}

/// What one page replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Replayed {
    /// The next seq to expect.
    pub next: u64,
    /// The final seq, if the archive is complete.
    pub complete: Option<u64>,
    /// The page ended before the archive's last chunk.
    pub more: bool,
}

/// Posts archived lines ≥ `from_seq`, chunk by chunk, until the page holds `page_lines`.
pub(crate) async fn replay(
    archive: &impl Archive,
    frames: &impl Frames,
    op: &OperationId,
    from_seq: u64,
    page_lines: u64,
) -> Result<Replayed, WsError> {
    let (chunks, complete) = archive.list(op, from_seq).await?;
    let mut next = from_seq;
    let mut sent = 0u64;
    for c in &chunks {
        if c.last_seq < next {
            continue;
        }
        let in_chunk = c.last_seq + 1 - next.max(c.first_seq);
        if sent > 0 && sent + in_chunk > page_lines {
            return Ok(Replayed {
                next,
                complete,
                more: true,
            });
        }
        let lines = archive.read(c, next).await?;
        let Some(first) = lines.first().map(|l| l.seq) else {
            continue;
        };
        next = lines.last().map_or(next, |l| l.seq + 1);
        sent += lines.len() as u64;
        let frame = LogFrame::Log {
            operation_id: op.clone(),
            first_seq: first,
            lines,
            skipped: None,
        };
        for f in encode_frames(&frame, MAX_FRAME_BYTES)? {
            frames.post(&f).await?;
        }
    }
    Ok(Replayed {
        next,
        complete,
        more: false,
    })
}

/// The archive in the artifacts bucket.
pub(crate) struct S3Archive<'a> {
    pub s3: &'a aws_sdk_s3::Client,
    pub bucket: &'a str,
}

impl Archive for S3Archive<'_> {
    async fn list(
        &self,
        op: &OperationId,
        from_seq: u64,
    ) -> Result<(Vec<ArchiveChunk>, Option<u64>), WsError> {
        Ok(list_archive(self.s3, self.bucket, op, from_seq).await?)
    }

    async fn read(&self, chunk: &ArchiveChunk, from_seq: u64) -> Result<Vec<LogLine>, WsError> {
        Ok(read_chunk(self.s3, self.bucket, chunk, from_seq).await?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use strato_model::messages::LogStream;
    use strato_stream::logs::ServerFrame;

    /// An archive of `chunks` chunks of `per` lines each, complete.
    struct Fake {
        chunks: u64,
        per: u64,
        reads: Mutex<u64>,
    }

    impl Archive for Fake {
        async fn list(
            &self,
            _op: &OperationId,
            from_seq: u64,
        ) -> Result<(Vec<ArchiveChunk>, Option<u64>), WsError> {
            let chunks = (0..self.chunks)
                .map(|i| ArchiveChunk {
                    key: format!("c{i}"),
                    first_seq: i * self.per + 1,
                    last_seq: (i + 1) * self.per,
                })
                .filter(|c| c.last_seq >= from_seq)
                .collect();
            Ok((chunks, Some(self.chunks * self.per)))
        }

        async fn read(&self, chunk: &ArchiveChunk, from_seq: u64) -> Result<Vec<LogLine>, WsError> {
            *self.reads.lock().unwrap() += 1;
            Ok((chunk.first_seq.max(from_seq)..=chunk.last_seq)
                .map(|seq| LogLine {
                    seq,
                    ts: strato_model::ts::now(),
                    stream: LogStream::Stdout,
                    step: "apply".into(),
                    text: format!("line {seq}"),
                })
                .collect())
        }
    }

    /// The seqs of the lines posted.
    #[derive(Default)]
    struct Posted(Mutex<Vec<u64>>);

    impl Frames for Posted {
        async fn post(&self, frame: &str) -> Result<(), WsError> {
            if let Ok(ServerFrame::Log(LogFrame::Log { lines, .. })) = serde_json::from_str(frame) {
                self.0.lock().unwrap().extend(lines.iter().map(|l| l.seq));
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_long_archive_is_replayed_in_pages_each_bounded_and_together_whole() {
        let archive = Fake {
            chunks: 20,
            per: 2_000,
            reads: Mutex::new(0),
        };
        let op = OperationId::generate();
        let mut from = 1;
        let mut pages = 0;
        let mut all = Vec::new();
        loop {
            let posted = Posted::default();
            let r = replay(&archive, &posted, &op, from, PAGE_LINES).await.unwrap();
            let seqs = posted.0.into_inner().unwrap();
            assert!(
                seqs.len() as u64 <= PAGE_LINES,
                "page {pages}: {} lines",
                seqs.len()
            );
            assert!(!seqs.is_empty());
            assert_eq!(r.next, seqs.last().unwrap() + 1);
            assert_eq!(r.complete, Some(40_000));
            all.extend(seqs);
            pages += 1;
            from = r.next;
            if !r.more {
                break;
            }
            assert!(pages < 100, "the pages end");
        }
        assert_eq!(all, (1..=40_000).collect::<Vec<_>>(), "every line once, in order");
        assert_eq!(pages, 10, "two chunks of 2,000 lines per page");
        assert_eq!(*archive.reads.lock().unwrap(), 20, "each chunk read once");
    }

    #[tokio::test]
    async fn a_page_is_never_empty_and_a_short_archive_is_one_page() {
        let big = Fake {
            chunks: 2,
            per: PAGE_LINES * 2,
            reads: Mutex::new(0),
        };
        let posted = Posted::default();
        let r = replay(&big, &posted, &OperationId::generate(), 1, PAGE_LINES)
            .await
            .unwrap();
        assert_eq!(posted.0.into_inner().unwrap().len() as u64, PAGE_LINES * 2);
        assert!(r.more);
        let small = Fake {
            chunks: 2,
            per: 100,
            reads: Mutex::new(0),
        };
        let posted = Posted::default();
        let r = replay(&small, &posted, &OperationId::generate(), 150, PAGE_LINES)
            .await
            .unwrap();
        assert_eq!(posted.0.into_inner().unwrap(), (150..=200).collect::<Vec<_>>());
        assert_eq!((r.next, r.more), (201, false));
    }
}
