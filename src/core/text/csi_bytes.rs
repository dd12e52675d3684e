//! The byte classes of the CSI alternative of ansi-regex 6.2, as `ansi` matches it and the
//! fast paths of `bytes` and `fast` test them a block at a time. A leaf: both sides use
//! it, so neither uses the other for it.

/// `[[\]()#;?]`
pub(crate) const fn is_csi_prefix(byte: u8) -> bool {
  matches!(byte, b'[' | b']' | b'(' | b')' | b'#' | b';' | b'?')
}

/// True for the bytes a match of the CSI alternative can hold after its
/// introducer (prefix, parameter and final bytes): the only bytes it removes.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const fn is_csi_byte(byte: u8) -> bool {
  is_csi_prefix(byte) || byte.is_ascii_digit() || byte == b';' || byte == b':' || is_csi_final(byte)
}

/// `[\dA-PR-TZcf-nq-uy=><~]` (JavaScript `\d` is ASCII only).
pub(crate) const fn is_csi_final(byte: u8) -> bool {
  matches!(
    byte,
    b'0'..=b'9'
      | b'A'..=b'P'
      | b'R'..=b'T'
      | b'Z'
      | b'c'
      | b'f'..=b'n'
      | b'q'..=b'u'
      | b'y'
      | b'='
      | b'>'
      | b'<'
      | b'~'
  )
}
