use super::*;
use serde_json::json;

#[test]
fn tables_render_as_kubectl_prints_them() {
    let t = json!({"columnDefinitions": [
            {"name": "Name", "priority": 0}, {"name": "Ready", "priority": 0},
            {"name": "IP", "priority": 1}],
        "rows": [{"cells": ["web", "1/1", "10.88.0.2"],
                  "object": {"metadata": {"namespace": "team"}}},
                 {"cells": ["a-longer-name", "0/1", null],
                  "object": {"metadata": {"namespace": "default"}}}]});
    assert_eq!(
        render_table(&t, false, false),
        "NAME            READY\nweb             1/1\na-longer-name   0/1\n"
    );
    let wide = render_table(&t, true, true);
    assert_eq!(
        wide.lines().next().unwrap(),
        "NAMESPACE   NAME            READY   IP"
    );
    assert!(
        wide.contains("default     a-longer-name   0/1     <none>"),
        "{wide}"
    );
}
