//! A connection some of whose bytes were read already, readable again from the start:
//! what hands a sniffed connection on to the HTTP server as if untouched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::first_request::{FirstRequest, Seen};

pub struct Rewind<T> {
    read: Bytes,
    inner: T,
    /// Watching an HTTP/2 client for its first request, until it comes.
    watch: Option<FirstRequest>,
}

impl<T> Rewind<T> {
    /// `inner`, whose reader sees `read` first.
    pub fn new(inner: T, read: Bytes) -> Self {
        Rewind {
            read,
            inner,
            watch: None,
        }
    }

    /// `inner`, an HTTP/2 connection, with its client's first request watched for.
    pub fn watched(inner: T) -> (Self, Seen) {
        let (watch, seen) = FirstRequest::new();
        let mut r = Self::new(inner, Bytes::new());
        r.watch = Some(watch);
        (r, seen)
    }

    /// The connection underneath (a TLS stream's peer certificates, say).
    pub fn get_ref(&self) -> &T {
        &self.inner
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Rewind<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read.has_remaining() {
            let n = self.read.len().min(buf.remaining());
            buf.put_slice(&self.read[..n]);
            self.read.advance(n);
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Some(w) = self.watch.as_mut()
            && w.feed(&buf.filled()[before..])
        {
            self.watch = None;
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Rewind<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn what_was_read_comes_first_then_the_rest() {
        let mut r = Rewind::new(&b" world"[..], Bytes::from_static(b"hello"));
        let mut out = String::new();
        r.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "hello world");
    }
}
