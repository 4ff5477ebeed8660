//! The shape of a YAML input, checked before anything is built from it: a streaming pass
//! over the parser's events (saphyr-parser, which keeps nothing but a stack as deep as the
//! input's nesting) that counts the nodes every document expands to, aliases included,
//! and the nesting depth, and stops at the first excess. serde_yaml_ng, which then builds
//! the values, loads a whole document's events before it builds anything, so an input it
//! is handed must already be known to be small: 200,000 nested `[` (400 KB) took the agent
//! past 250 MiB inside its loader, before any budget of ours was asked.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// Nesting a Kubernetes object needs (about 10 for a pod with affinity terms) with room to
/// spare; serde_yaml_ng's own limit is 128.
pub(crate) const MAX_DEPTH: usize = 64;
/// Anchors an input may define (a manifest has a few, if any).
pub(crate) const MAX_ANCHORS: usize = 1_000;

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ShapeError {
    /// The nodes of documents 1..=`document`, aliases expanded, exceed the budget.
    TooLarge {
        document: usize,
    },
    TooDeep {
        document: usize,
    },
    TooManyAnchors {
        document: usize,
    },
    Syntax {
        document: usize,
        message: String,
    },
}

/// One open collection: its anchor (0 for none) and the nodes it holds so far, itself
/// included.
struct Open {
    anchor: usize,
    nodes: u64,
}

/// Walks every event of `text`, spending the node budget and watching depth and anchors.
pub(crate) fn check(text: &str, budget: usize) -> Result<(), ShapeError> {
    let mut walk = Walk {
        budget: budget as u64,
        spent: 0,
        document: 0,
        open: Vec::new(),
        anchors: HashMap::new(),
    };
    for event in Parser::new_from_str(text) {
        match event {
            Ok((event, _)) => walk.event(event)?,
            Err(e) => {
                return Err(ShapeError::Syntax {
                    document: walk.document.max(1),
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(())
}

struct Walk {
    budget: u64,
    spent: u64,
    document: usize,
    open: Vec<Open>,
    /// Each anchor's size, aliases within it expanded.
    anchors: HashMap<usize, u64>,
}

impl Walk {
    fn event(&mut self, event: Event<'_>) -> Result<(), ShapeError> {
        match event {
            Event::DocumentStart(_) => self.document += 1,
            Event::Scalar(_, _, anchor, _) => {
                self.name(anchor, 1)?;
                self.add(1)?;
            }
            Event::Alias(anchor) => {
                let size = self.anchors.get(&anchor).copied().unwrap_or(1);
                self.add(size)?;
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if self.open.len() == MAX_DEPTH {
                    return Err(ShapeError::TooDeep {
                        document: self.document,
                    });
                }
                self.spend(1)?;
                self.open.push(Open { anchor, nodes: 1 });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(done) = self.open.pop() {
                    self.name(done.anchor, done.nodes)?;
                    if let Some(parent) = self.open.last_mut() {
                        parent.nodes = parent.nodes.saturating_add(done.nodes);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A node of `size` nodes joins the collection open now.
    fn add(&mut self, size: u64) -> Result<(), ShapeError> {
        self.spend(size)?;
        if let Some(parent) = self.open.last_mut() {
            parent.nodes = parent.nodes.saturating_add(size);
        }
        Ok(())
    }

    fn spend(&mut self, size: u64) -> Result<(), ShapeError> {
        self.spent = self.spent.saturating_add(size);
        if self.spent > self.budget {
            return Err(ShapeError::TooLarge {
                document: self.document,
            });
        }
        Ok(())
    }

    fn name(&mut self, anchor: usize, size: u64) -> Result<(), ShapeError> {
        if anchor == 0 {
            return Ok(());
        }
        if self.anchors.len() == MAX_ANCHORS && !self.anchors.contains_key(&anchor) {
            return Err(ShapeError::TooManyAnchors {
                document: self.document,
            });
        }
        self.anchors.insert(anchor, size);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_documents_count_their_nodes() {
        // The map, its key, the list and its two items.
        assert_eq!(check("a: [1, 2]\n", 5), Ok(()));
        assert_eq!(
            check("a: [1, 2]\n", 4),
            Err(ShapeError::TooLarge { document: 1 })
        );
        assert_eq!(
            check("a: 1\n---\nb: 2\n", 5),
            Err(ShapeError::TooLarge { document: 2 }),
            "one budget for every document"
        );
    }

    #[test]
    fn aliases_count_as_what_they_expand_to_nested_ones_included() {
        // a: 4 nodes (the list and three scalars); b holds a twice: 9; c holds b twice: 19.
        let y = "a: &a [x, y, z]\nb: &b [*a, *a]\nc: [*b, *b]\n";
        // The root map, 3 keys, a (4), b (1 + 4 + 4), c (1 + 9 + 9) = 1 + 3 + 4 + 9 + 19.
        assert_eq!(check(y, 36), Ok(()));
        assert_eq!(check(y, 35), Err(ShapeError::TooLarge { document: 1 }));
    }

    #[test]
    fn the_billion_laughs_stop_at_the_budget_without_expanding() {
        let mut y = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..30 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            y.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let t0 = std::time::Instant::now();
        assert_eq!(
            check(&y, 500_000),
            Err(ShapeError::TooLarge { document: 1 })
        );
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn deep_nesting_is_refused_at_the_limit() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(check(&ok, 1_000), Ok(()));
        // The scanner looks a few levels ahead of the events, and stops at its own limit
        // (256) if that comes first: either way after a few hundred bytes.
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        let e = check(&deep, 1_000_000).unwrap_err();
        assert!(
            e == ShapeError::TooDeep { document: 1 }
                || matches!(&e, ShapeError::Syntax { message, .. } if message.contains("recursion limit")),
            "{e:?}"
        );
        let blocks = "- ".repeat(MAX_DEPTH + 1) + "x\n";
        assert_eq!(
            check(&blocks, 1_000),
            Err(ShapeError::TooDeep { document: 1 })
        );
    }

    #[test]
    fn anchors_are_limited_and_syntax_errors_named() {
        let many: String = (0..=MAX_ANCHORS).map(|i| format!("- &a{i} x\n")).collect();
        assert_eq!(
            check(&many, 1_000_000),
            Err(ShapeError::TooManyAnchors { document: 1 })
        );
        assert!(matches!(
            check("a: [1, 2\n", 100),
            Err(ShapeError::Syntax { document: 1, .. })
        ));
    }
}
