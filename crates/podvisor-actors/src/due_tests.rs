use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::*;
use crate::testing::{paused_system, until};

async fn next(q: &mut DueQueue<&'static str>) -> (&'static str, Instant) {
    poll_fn(|cx| q.poll_due(cx)).await
}

#[tokio::test(start_paused = true)]
async fn one_deadline_per_key_in_time_order() {
    let t0 = Instant::now();
    let mut q = DueQueue::new();
    q.schedule("a", t0 + Duration::from_secs(10));
    q.schedule("b", t0 + Duration::from_secs(2));
    q.schedule("c", t0 + Duration::from_secs(5));
    q.schedule("a", t0 + Duration::from_secs(1)); // moves, does not add
    q.schedule_earliest("b", t0 + Duration::from_secs(3)); // later: ignored
    q.schedule_earliest("c", t0 + Duration::from_secs(4)); // sooner: taken
    assert_eq!(q.len(), 3);
    assert_eq!(q.next_deadline(), Some(t0 + Duration::from_secs(1)));
    assert_eq!(q.deadline(&"c"), Some(t0 + Duration::from_secs(4)));
    q.schedule("d", t0 + Duration::from_secs(3));
    assert!(q.cancel(&"d") && !q.cancel(&"d"));
    let mut fired = Vec::new();
    for _ in 0..3 {
        let (key, at) = next(&mut q).await;
        assert_eq!(Instant::now(), at, "{key} fired on time");
        fired.push((key, (at - t0).as_secs()));
    }
    assert_eq!(fired, [("a", 1), ("b", 2), ("c", 4)]);
    assert!(q.is_empty() && q.next_deadline().is_none());
}

/// An actor that only records when its keys come due.
struct Timers {
    queue: DueQueue<u32>,
    fired: Arc<Mutex<Vec<(u32, Duration)>>>,
    t0: Instant,
}

impl Actor for Timers {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        drive(
            ctx,
            |a: &mut Timers| &mut a.queue,
            |a, key, _, _| {
                let after = Instant::now() - a.t0;
                a.fired.lock().unwrap().push((key, after));
            },
        );
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct At(u32, Duration);

impl Handler<At> for Timers {
    type Result = ();
    fn handle(&mut self, At(key, after): At, _: &mut Context<Self>) {
        self.queue.schedule(key, self.t0 + after);
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Cancel(u32);

impl Handler<Cancel> for Timers {
    type Result = ();
    fn handle(&mut self, Cancel(key): Cancel, _: &mut Context<Self>) {
        self.queue.cancel(&key);
    }
}

#[test]
fn an_actor_is_woken_for_each_deadline_even_after_its_queue_ran_empty() {
    paused_system().block_on(async {
        let fired = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let addr = Timers {
            queue: DueQueue::new(),
            fired: fired.clone(),
            t0,
        }
        .start();
        addr.send(At(1, Duration::from_secs(5))).await.unwrap();
        addr.send(At(2, Duration::from_secs(3))).await.unwrap();
        addr.send(At(3, Duration::from_secs(4))).await.unwrap();
        addr.send(Cancel(3)).await.unwrap();
        until("two fired", Duration::from_secs(10), || {
            fired.lock().unwrap().len() == 2
        })
        .await;
        // Empty now; a new deadline must still wake the actor.
        addr.send(At(4, Duration::from_secs(20))).await.unwrap();
        until("third fired", Duration::from_secs(30), || {
            fired.lock().unwrap().len() == 3
        })
        .await;
        let got: Vec<(u32, u64)> = fired
            .lock()
            .unwrap()
            .iter()
            .map(|(k, d)| (*k, d.as_millis() as u64))
            .collect();
        assert_eq!(got, [(2, 3000), (1, 5000), (4, 20000)]);
    });
}
