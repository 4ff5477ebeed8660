//! Container event streams the proxy serves itself: gRPC message frames of
//! `ContainerEventResponse`, fed by the test.

use bytes::{BufMut, Bytes, BytesMut};
use podvisor_cri::proto::ContainerEventResponse;
use prost::Message;
use tokio::sync::mpsc;

/// One gRPC length-prefixed message: an uncompressed flag, the length, the bytes.
pub(crate) fn frame(event: &ContainerEventResponse) -> Bytes {
    let len = event.encoded_len();
    let mut buf = BytesMut::with_capacity(5 + len);
    buf.put_u8(0);
    buf.put_u32(len as u32);
    event
        .encode(&mut buf)
        .expect("a BytesMut with room for the message");
    buf.freeze()
}

/// The open served streams; a stream whose client went away is dropped at the next send.
#[derive(Debug, Default)]
pub(crate) struct Subscribers {
    senders: Vec<mpsc::UnboundedSender<Bytes>>,
}

impl Subscribers {
    pub(crate) fn subscribe(&mut self) -> mpsc::UnboundedReceiver<Bytes> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.senders.push(tx);
        rx
    }

    /// Sends `frames` to every open stream; answers how many streams got them.
    pub(crate) fn send(&mut self, frames: &[Bytes]) -> usize {
        self.senders
            .retain(|tx| frames.iter().all(|f| tx.send(f.clone()).is_ok()));
        self.senders.len()
    }

    pub(crate) fn open(&mut self) -> usize {
        self.senders.retain(|tx| !tx.is_closed());
        self.senders.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_the_grpc_prefix_and_the_message() {
        let e = ContainerEventResponse {
            container_id: "abc".into(),
            container_event_type: 2,
            created_at: 7,
            ..Default::default()
        };
        let f = frame(&e);
        assert_eq!(f[0], 0);
        let len = u32::from_be_bytes([f[1], f[2], f[3], f[4]]) as usize;
        assert_eq!(len, f.len() - 5);
        assert_eq!(ContainerEventResponse::decode(&f[5..]).unwrap(), e);
    }

    #[test]
    fn streams_whose_client_left_are_dropped() {
        let mut subs = Subscribers::default();
        let mut kept = subs.subscribe();
        drop(subs.subscribe());
        assert_eq!(subs.send(&[Bytes::from_static(b"x")]), 1);
        assert_eq!(kept.try_recv().unwrap(), Bytes::from_static(b"x"));
        assert_eq!(subs.open(), 1);
    }
}
