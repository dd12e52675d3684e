//! Path helpers: file-name sanitising, the CLI's monitor output path and the status sidecar
//! path (CONTRACT.md §1.2, §1.7, §2.14, §3.13, §3.14).

use std::path::{Component, Path, PathBuf};

/// `sanitizeFilenameComponent` (CONTRACT.md §1.7): every UTF-16 unit outside
/// `[a-zA-Z0-9_-]` becomes `_`, so a char outside the BMP (an emoji) gives `__`.
pub fn sanitize_filename_component(value: &str) -> String {
  let mut out = String::with_capacity(value.len());
  for c in value.chars() {
    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
      out.push(c);
    } else {
      out.extend(std::iter::repeat_n('_', c.len_utf16()));
    }
  }
  out
}

/// The CLI's `getMonitorOutputPath` (CONTRACT.md §1.2): Node's
/// `join(projectDir, 'monitors', sanitize(conversationId), 'monitor-' + sanitize(monitorId) + '.log')`,
/// with the platform separator and `path.join`'s lexical normalisation.
pub fn get_monitor_output_path(
  project_dir: &str,
  conversation_id: &str,
  monitor_id: &str,
) -> String {
  let mut path = normalize_lexically(Path::new(project_dir));
  path.push("monitors");
  path.push(sanitize_filename_component(conversation_id));
  path.push(format!(
    "monitor-{}.log",
    sanitize_filename_component(monitor_id)
  ));
  path.to_string_lossy().into_owned()
}

/// Drops `.` and repeated separators and resolves `..` against the preceding name, without
/// touching the file system (Node's `path.normalize`).
fn normalize_lexically(path: &Path) -> PathBuf {
  let mut out = PathBuf::new();
  for component in path.components() {
    match component {
      Component::CurDir => {}
      Component::ParentDir => match out.components().next_back() {
        Some(Component::Normal(_)) => {
          out.pop();
        }
        Some(Component::RootDir | Component::Prefix(_)) => {}
        Some(Component::ParentDir | Component::CurDir) | None => out.push(".."),
      },
      other => out.push(other),
    }
  }
  out
}

/// `statusFilePathFor` (CONTRACT.md §2.14): `x.output` becomes `x.status`; any other path gets
/// `.status` appended.
pub fn status_file_path_for(output_file: &str) -> String {
  let stem = output_file.strip_suffix(".output").unwrap_or(output_file);
  format!("{stem}.status")
}

#[cfg(test)]
mod tests {
  use super::*;
  #[cfg(unix)]
  use crate::test_vectors::{cases, describe};
  use crate::text::test_support::assert_string_vectors;

  #[test]
  fn sanitize_filename_component_vectors() {
    assert_string_vectors("sanitizeFilenameComponent", sanitize_filename_component);
  }

  #[test]
  fn status_file_path_for_vectors() {
    assert_string_vectors("statusFilePathFor", status_file_path_for);
    assert_eq!(status_file_path_for(".output"), ".status");
    assert_eq!(status_file_path_for("a.output.log"), "a.output.log.status");
  }

  #[cfg(unix)]
  #[test]
  fn get_monitor_output_path_vectors() {
    for case in cases("getMonitorOutputPath") {
      let input = &case["input"];
      let field = |name: &str| input[name].as_str().expect("string field").to_owned();
      let expected = case["expected"].as_str().expect("string expected");
      assert_eq!(
        get_monitor_output_path(
          &field("projectDir"),
          &field("conversationId"),
          &field("monitorId")
        ),
        expected,
        "{}",
        describe(&case)
      );
    }
  }

  #[cfg(unix)]
  #[test]
  fn get_monitor_output_path_normalises_like_node_join() {
    let join = get_monitor_output_path;
    assert_eq!(
      join("/p/.qwen/", "s", "m"),
      "/p/.qwen/monitors/s/monitor-m.log"
    );
    assert_eq!(
      join("/p//./x/../q", "s", "m"),
      "/p/q/monitors/s/monitor-m.log"
    );
    assert_eq!(join("/..", "s", "m"), "/monitors/s/monitor-m.log");
    assert_eq!(join("a/../..", "s", "m"), "../monitors/s/monitor-m.log");
    assert_eq!(join("", "", ""), "monitors/monitor-.log");
    assert_eq!(
      join("/p", "../x", "a/b"),
      "/p/monitors/___x/monitor-a_b.log"
    );
  }
}
