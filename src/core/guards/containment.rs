//! Directory containment (CONTRACT.md §2.11 "Containment", §4 item 19).
//!
//! A path is resolved lexically (`path.resolve`: made absolute against the working directory,
//! `.` and `..` removed), then canonicalised: the `realpath` of its longest existing prefix with
//! the remaining segments appended. A directory is inside a root when its canonical form equals
//! the root's or continues it by whole segments, so `/srv/project-a-evil` is not inside
//! `/srv/project-a`, and a symlink under the root that points elsewhere is outside. On Windows the
//! comparison ignores case.

use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf, MAIN_SEPARATOR_STR};

/// The path made of `components`, built in one pass. `PathBuf::push` is not used component by
/// component: on Windows each push onto a verbatim (`\\?\`) path, which `canonicalize` returns,
/// re-parses the whole path, so a path of n segments would cost O(n²) (minutes for a 1 MiB path).
fn join_components(components: &[Component<'_>]) -> PathBuf {
  let mut joined = OsString::new();
  let mut need_separator = false;
  for component in components {
    match component {
      Component::Prefix(_) => {
        joined.push(component.as_os_str());
        need_separator = false;
      }
      Component::RootDir => {
        joined.push(MAIN_SEPARATOR_STR);
        need_separator = false;
      }
      _ => {
        if need_separator {
          joined.push(MAIN_SEPARATOR_STR);
        }
        joined.push(component.as_os_str());
        need_separator = true;
      }
    }
  }
  PathBuf::from(joined)
}

/// `path.resolve(path)`: absolute against the current directory, `.` and `..` removed without
/// touching the file system (`..` never climbs above the root). Linear in the path's length.
fn resolve_lexically(path: &Path) -> PathBuf {
  let absolute = if path.is_absolute() {
    path.to_path_buf()
  } else {
    std::env::current_dir().unwrap_or_default().join(path)
  };
  let mut resolved: Vec<Component<'_>> = Vec::new();
  for component in absolute.components() {
    match component {
      Component::CurDir => {}
      Component::ParentDir => {
        if matches!(resolved.last(), Some(Component::Normal(_))) {
          resolved.pop();
        }
      }
      other => resolved.push(other),
    }
  }
  join_components(&resolved)
}

/// The path made of the first `count` components.
fn prefix_of(components: &[Component<'_>], count: usize) -> PathBuf {
  join_components(&components[..count])
}

/// `realpath` of the longest existing prefix of `path` (already lexically resolved), with the
/// remaining segments appended. A path whose prefix does not resolve cannot have a longer prefix
/// that does, so a binary search finds the longest one in O(log segments) `realpath` calls.
fn canonicalize_existing_prefix(path: &Path) -> PathBuf {
  let components: Vec<Component<'_>> = path.components().collect();
  let (mut good, mut bad) = (0, components.len() + 1);
  let mut base = None;
  while bad - good > 1 {
    let mid = good + (bad - good) / 2;
    match fs::canonicalize(prefix_of(&components, mid)) {
      Ok(real) => {
        good = mid;
        base = Some(real);
      }
      Err(_) => bad = mid,
    }
  }
  match base {
    Some(mut real) => {
      // One push of the whole rest (see `join_components`).
      if good < components.len() {
        real.push(join_components(&components[good..]));
      }
      real
    }
    None => path.to_path_buf(),
  }
}

/// A Windows path in comparable form: without the `\\?\` verbatim prefix `canonicalize` adds,
/// lower-cased.
fn fold_windows_path(path: &str) -> String {
  let plain = match path.strip_prefix(r"\\?\UNC\") {
    Some(unc) => format!(r"\\{unc}"),
    None => path.strip_prefix(r"\\?\").unwrap_or(path).to_owned(),
  };
  plain.to_lowercase()
}

/// The canonical, comparable form of `path` (see the module documentation).
fn canonical(path: &str) -> PathBuf {
  let real = canonicalize_existing_prefix(&resolve_lexically(Path::new(path)));
  if cfg!(windows) {
    PathBuf::from(fold_windows_path(&real.to_string_lossy()))
  } else {
    real
  }
}

/// Whether `dir` is inside (or equal to) any of `roots` under the containment rule. False for an
/// empty `roots`.
pub(super) fn is_within_any(dir: &str, roots: &[String]) -> bool {
  if roots.is_empty() {
    return false;
  }
  let dir = canonical(dir);
  roots.iter().any(|root| dir.starts_with(canonical(root)))
}

/// Whether `dir` is inside `root` or equal to it, by the containment rule of CONTRACT.md §2.11:
/// lexical resolution, canonicalisation of the longest existing prefix, segment-aware
/// comparison (case-insensitive on Windows).
#[must_use]
pub fn is_path_within(dir: &str, root: &str) -> bool {
  canonical(dir).starts_with(canonical(root))
}

#[cfg(test)]
mod tests {
  use super::*;
  #[cfg(unix)]
  use crate::guards::test_support::TempTree;

  #[test]
  fn resolves_dot_segments_lexically() {
    // On Windows a rooted path without a drive is on the current directory's drive.
    let cwd = std::env::current_dir().unwrap();
    let drive = match cwd.components().next() {
      Some(prefix @ Component::Prefix(_)) => prefix.as_os_str().to_string_lossy().into_owned(),
      _ => String::new(),
    };
    let cases = [
      ("/srv/a/../b", "/srv/b"),
      ("/srv/./a/", "/srv/a"),
      ("/../..", "/"),
    ];
    for (input, want) in cases {
      assert_eq!(
        resolve_lexically(Path::new(input)),
        Path::new(&format!("{drive}{want}")),
        "{input:?}"
      );
    }
    // On Windows `//srv//a` names the UNC share `\\srv\a`, not a rooted path.
    #[cfg(unix)]
    assert_eq!(
      resolve_lexically(Path::new("//srv//a")),
      Path::new("/srv/a")
    );
    #[cfg(windows)]
    {
      let cases = [
        (r"C:\srv\a\..\b", r"C:\srv\b"),
        (r"C:\srv\.\a\", r"C:\srv\a"),
        (r"C:\..\..", r"C:\"),
        (r"\\server\share\a\..\..", r"\\server\share\"),
      ];
      for (input, want) in cases {
        assert_eq!(
          resolve_lexically(Path::new(input)),
          Path::new(want),
          "{input:?}"
        );
      }
    }
    assert_eq!(resolve_lexically(Path::new("x/..")), cwd);
  }

  #[test]
  fn joins_components_as_push_does() {
    for path in ["/", "/a", "/a/b/c", "a/b", "//srv//a/"] {
      let components: Vec<Component<'_>> = Path::new(path).components().collect();
      let pushed: PathBuf = components.iter().collect();
      assert_eq!(
        join_components(&components).as_os_str(),
        pushed.as_os_str(),
        "{path:?}"
      );
    }
    #[cfg(windows)]
    for path in [
      r"C:\",
      r"C:\a\b",
      r"C:a",
      r"\\?\C:\a\b",
      r"\\server\share\x",
      r"\\?\UNC\s\h\x",
    ] {
      let components: Vec<Component<'_>> = Path::new(path).components().collect();
      let pushed: PathBuf = components.iter().collect();
      assert_eq!(
        join_components(&components).as_os_str(),
        pushed.as_os_str(),
        "{path:?}"
      );
    }
  }

  #[test]
  fn compares_whole_segments() {
    let cases = [
      ("/srv/project-a", "/srv/project-a", true),
      ("/srv/project-a/sub", "/srv/project-a", true),
      ("/srv/project-a/sub/..", "/srv/project-a", true),
      ("/srv/project-a-evil/x", "/srv/project-a", false),
      ("/srv/project-a/../etc", "/srv/project-a", false),
      ("/srv", "/srv/project-a", false),
      ("/anything", "/", true),
      ("/srv/project-a/", "/srv/project-a/.", true),
    ];
    for (dir, root, want) in cases {
      assert_eq!(is_path_within(dir, root), want, "{dir:?} in {root:?}");
    }
  }

  #[test]
  fn empty_root_list_contains_nothing() {
    assert!(!is_within_any("/", &[]));
  }

  #[cfg(unix)]
  #[test]
  fn follows_symlinks_in_the_existing_prefix() {
    use std::os::unix::fs::symlink;
    let tree = TempTree::new("containment");
    let workspace = tree.dir("ws");
    let real = tree.dir("real");
    let outside = tree.dir("outside");
    symlink(&outside, workspace.join("escape")).unwrap();
    symlink(&real, tree.path().join("ws-link")).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_owned();

    assert!(!is_path_within(
      &s(&workspace.join("escape")),
      &s(&workspace)
    ));
    assert!(!is_path_within(
      &s(&workspace.join("escape/new/dirs")),
      &s(&workspace)
    ));
    assert!(is_path_within(
      &s(&workspace.join("escape/..")),
      &s(&workspace)
    ));
    assert!(is_path_within(
      &s(&real.join("sub")),
      &s(&tree.path().join("ws-link"))
    ));
    assert!(is_path_within(
      &s(&tree.path().join("ws-link/x")),
      &s(&real)
    ));
    assert!(is_within_any(
      &s(&workspace.join("a")),
      &[s(&outside), s(&workspace)]
    ));
  }

  #[test]
  fn folds_windows_paths() {
    assert_eq!(fold_windows_path(r"\\?\C:\Users\Me"), r"c:\users\me");
    assert_eq!(
      fold_windows_path(r"\\?\UNC\Server\Share\X"),
      r"\\server\share\x"
    );
    assert_eq!(fold_windows_path(r"D:\Work"), r"d:\work");
  }

  #[test]
  fn long_paths_stay_cheap() {
    let dir = format!("/{}", "a/".repeat(1 << 19));
    assert!(!is_path_within(&dir, "/srv/project-a"));
    assert!(is_path_within(&dir, "/"));
  }
}
