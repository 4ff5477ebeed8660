//! The version-skew policy (docs/version-skew.md): a podvisor release speaks one Kubernetes
//! minor's API types (`podvisor_core::version`), and, as a kubelet, may join an API server
//! of that minor or up to three minors newer, never an older one. Meeting another version
//! is said once at join, in the log and in the Node's kubelet version's terms.

use podvisor_core::version::{MAJOR, MINOR};

/// How many minors newer than podvisor's types an API server may be (the kubelet's n-3).
const NEWER_SUPPORTED: u32 = 3;

/// What to say of an API server reporting `major.minor` (from `/version`), if anything.
pub fn skew(major: &str, minor: &str) -> Option<String> {
    let ours: u32 = MINOR.parse().unwrap_or(0);
    // Some distributions report "37+" for the minor.
    let theirs: Option<u32> = minor.trim_end_matches('+').parse().ok();
    let Some(theirs) = theirs.filter(|_| major == MAJOR) else {
        return Some(format!(
            "the API server reports version {major}.{minor}, which podvisor cannot place; \
             it speaks Kubernetes {MAJOR}.{ours}"
        ));
    };
    if theirs < ours {
        Some(format!(
            "the API server is Kubernetes {major}.{theirs}, older than podvisor's {MAJOR}.{ours}: \
             a node may not be newer than its control plane (unsupported: upgrade the \
             control plane first)"
        ))
    } else if theirs > ours + NEWER_SUPPORTED {
        Some(format!(
            "the API server is Kubernetes {major}.{theirs}, more than {NEWER_SUPPORTED} minors \
             newer than podvisor's {MAJOR}.{ours} (unsupported: fields it adds to pods are \
             unknown to this node)"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_minor_and_up_to_three_newer_are_supported_and_others_are_said() {
        let ours: u32 = MINOR.parse().unwrap();
        assert_eq!(skew("1", MINOR), None);
        assert_eq!(skew("1", &format!("{}+", ours + 3)), None);
        let older = skew("1", &(ours - 1).to_string()).unwrap();
        assert!(older.contains("older than podvisor's"), "{older}");
        let newer = skew("1", &(ours + 4).to_string()).unwrap();
        assert!(newer.contains("more than 3 minors newer"), "{newer}");
        assert!(skew("2", "0").is_some());
        assert!(skew("1", "x").is_some());
    }
}
