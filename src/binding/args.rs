//! Argument checking shared by every binding: wrong types become `TypeError`,
//! values out of range become `RangeError`, each naming the argument or field.

use napi::bindgen_prelude::*;
use napi::sys;

/// Throws a JavaScript `TypeError` and returns the error that tells napi-rs it is pending.
pub fn type_error(env: &Env, message: String) -> Error {
  let _ = env.throw_type_error(&message, Some("ERR_INVALID_ARG_TYPE"));
  Error::new(Status::PendingException, message)
}

/// Throws a JavaScript `RangeError` and returns the error that tells napi-rs it is pending.
pub fn range_error(env: &Env, message: String) -> Error {
  let _ = env.throw_range_error(&message, Some("ERR_OUT_OF_RANGE"));
  Error::new(Status::PendingException, message)
}

/// How a received value is described in error messages, in Node's style.
pub fn received(value: &Unknown) -> String {
  match value.get_type() {
    Ok(ValueType::Undefined) => "Received undefined".to_owned(),
    Ok(ValueType::Null) => "Received null".to_owned(),
    Ok(ValueType::Number) => match unsafe { value.cast::<f64>() } {
      Ok(n) => format!("Received type number ({n})"),
      Err(_) => "Received type number".to_owned(),
    },
    Ok(ValueType::String) => "Received type string".to_owned(),
    Ok(ValueType::Boolean) => "Received type boolean".to_owned(),
    Ok(ValueType::Function) => "Received type function".to_owned(),
    Ok(ValueType::Symbol) => "Received type symbol".to_owned(),
    Ok(ValueType::Object) => format!("Received an instance of {}", object_kind(value)),
    Ok(other) => format!("Received type {}", format!("{other:?}").to_lowercase()),
    Err(_) => "Received an unknown value".to_owned(),
  }
}

/// The constructor name Node would print for an object, for the kinds N-API can tell apart
/// without running JavaScript (no property is read, so no getter or proxy trap runs).
fn object_kind(value: &Unknown) -> &'static str {
  let is = |check: fn(&Unknown) -> Result<bool>| check(value).unwrap_or(false);
  if is(|v| v.is_typedarray()) {
    // A Buffer is a Uint8Array; its class name is not visible without running JavaScript.
    return typed_array_info(value).map_or("TypedArray", |info| info.kind_name());
  }
  if is(|v| v.is_dataview()) {
    "DataView"
  } else if is(|v| v.is_arraybuffer()) {
    "ArrayBuffer"
  } else if is(|v| v.is_array()) {
    "Array"
  } else if is(|v| v.is_date()) {
    "Date"
  } else if is(|v| v.is_promise()) {
    "Promise"
  } else if is(|v| v.is_error()) {
    "Error"
  } else {
    "Object"
  }
}

/// What `napi_get_typedarray_info` says about a typed array.
struct TypedArrayInfo {
  kind: sys::napi_typedarray_type,
  data: *const u8,
  /// Elements, not bytes.
  length: usize,
}

impl TypedArrayInfo {
  fn kind_name(&self) -> &'static str {
    use sys::TypedarrayType as T;
    match self.kind {
      T::int8_array => "Int8Array",
      T::uint8_array => "Uint8Array",
      T::uint8_clamped_array => "Uint8ClampedArray",
      T::int16_array => "Int16Array",
      T::uint16_array => "Uint16Array",
      T::int32_array => "Int32Array",
      T::uint32_array => "Uint32Array",
      T::float32_array => "Float32Array",
      T::float64_array => "Float64Array",
      // `bigint64_array` and `biguint64_array` (N-API 6; this addon targets 5).
      9 => "BigInt64Array",
      10 => "BigUint64Array",
      _ => "TypedArray",
    }
  }

  /// One byte per element: `Uint8Array` (and so `Buffer`), `Uint8ClampedArray`, `Int8Array`.
  fn has_byte_elements(&self) -> bool {
    use sys::TypedarrayType as T;
    matches!(
      self.kind,
      T::int8_array | T::uint8_array | T::uint8_clamped_array
    )
  }
}

fn typed_array_info(value: &Unknown) -> Option<TypedArrayInfo> {
  let raw = value.value();
  let mut kind = 0;
  let mut length = 0;
  let mut data = std::ptr::null_mut();
  let mut array_buffer = std::ptr::null_mut();
  let mut byte_offset = 0;
  // SAFETY: `raw` is a live value of the current call; every out-pointer is valid.
  let status = unsafe {
    sys::napi_get_typedarray_info(
      raw.env,
      raw.value,
      &mut kind,
      &mut length,
      &mut data,
      &mut array_buffer,
      &mut byte_offset,
    )
  };
  (status == sys::Status::napi_ok).then_some(TypedArrayInfo {
    kind,
    data: data.cast_const().cast(),
    length,
  })
}

/// A required bytes argument: a `Buffer`, `Uint8Array`, `Uint8ClampedArray` or `Int8Array`
/// (one byte per element), read in place. Any other value, other typed arrays and `DataView`
/// included, is a `TypeError` in Node's words (`... must be an instance of Buffer or
/// Uint8Array. Received an instance of Float64Array`).
pub fn bytes<'a>(env: &Env, value: &'a Unknown, name: &str) -> Result<&'a [u8]> {
  let info = match value.get_type()? {
    ValueType::Object if value.is_typedarray()? => typed_array_info(value),
    _ => None,
  };
  match info {
    Some(info) if info.has_byte_elements() => {
      if info.length == 0 || info.data.is_null() {
        return Ok(&[]);
      }
      // SAFETY: N-API reports `length` one-byte elements at `data`; the array is kept alive
      // by the calling scope and nothing runs JavaScript while the slice is borrowed.
      Ok(unsafe { std::slice::from_raw_parts(info.data, info.length) })
    }
    _ => Err(type_error(
      env,
      format!(
        "The \"{name}\" argument must be an instance of Buffer or Uint8Array. {}",
        received(value)
      ),
    )),
  }
}

pub fn is_undefined(value: &Unknown) -> bool {
  matches!(value.get_type(), Ok(ValueType::Undefined))
}

/// A required string argument.
pub fn string(env: &Env, value: &Unknown, name: &str) -> Result<String> {
  match value.get_type()? {
    ValueType::String => unsafe { value.cast::<String>() },
    _ => Err(type_error(
      env,
      format!(
        "The \"{name}\" argument must be of type string. {}",
        received(value)
      ),
    )),
  }
}

/// A required object argument (not null, not an array is not checked).
pub fn object<'env>(env: &Env, value: &Unknown<'env>, name: &str) -> Result<Object<'env>> {
  match value.get_type()? {
    ValueType::Object => unsafe { value.cast::<Object>() },
    _ => Err(type_error(
      env,
      format!(
        "The \"{name}\" argument must be of type object. {}",
        received(value)
      ),
    )),
  }
}

/// An optional object argument: `undefined` gives `None`.
pub fn optional_object<'env>(
  env: &Env,
  value: &Unknown<'env>,
  name: &str,
) -> Result<Option<Object<'env>>> {
  if is_undefined(value) {
    return Ok(None);
  }
  object(env, value, name).map(Some)
}

/// A property of an options object, as an `Unknown` (`undefined` when absent).
pub fn field<'env>(obj: &Object<'env>, key: &str) -> Result<Unknown<'env>> {
  obj.get_named_property::<Unknown>(key)
}

/// An optional string property: absent or `undefined` gives `None`.
pub fn optional_string_field(
  env: &Env,
  obj: &Object,
  key: &str,
  path: &str,
) -> Result<Option<String>> {
  let value = field(obj, key)?;
  if is_undefined(&value) {
    return Ok(None);
  }
  match value.get_type()? {
    ValueType::String => Ok(Some(unsafe { value.cast::<String>() }?)),
    _ => Err(type_error(
      env,
      format!(
        "The \"{path}\" property must be of type string. {}",
        received(&value)
      ),
    )),
  }
}

/// An optional integer property within `min..=max`: wrong type is a `TypeError`,
/// a non-integer or out-of-range number a `RangeError`. Never clamped.
pub fn optional_integer_field(
  env: &Env,
  obj: &Object,
  key: &str,
  path: &str,
  min: f64,
  max: f64,
) -> Result<Option<f64>> {
  let value = field(obj, key)?;
  if is_undefined(&value) {
    return Ok(None);
  }
  integer_in_range(env, &value, path, "property", min, max).map(Some)
}

/// A number that must be an integer within `min..=max`.
pub fn integer_in_range(
  env: &Env,
  value: &Unknown,
  path: &str,
  what: &str,
  min: f64,
  max: f64,
) -> Result<f64> {
  if value.get_type()? != ValueType::Number {
    return Err(type_error(
      env,
      format!(
        "The \"{path}\" {what} must be of type number. {}",
        received(value)
      ),
    ));
  }
  let n = unsafe { value.cast::<f64>() }?;
  if !n.is_finite() || n.fract() != 0.0 || n < min || n > max {
    let range = if max.is_finite() {
      format!(">= {min} && <= {max}")
    } else {
      format!(">= {min}")
    };
    return Err(range_error(
      env,
      format!(
        "The value of \"{path}\" is out of range. It must be an integer {range}. Received {n}"
      ),
    ));
  }
  Ok(n)
}

/// Hands a value created in this call back to JavaScript as a return value.
pub fn out<'a>(env: &Env, value: &impl JsValue<'a>) -> Unknown<'static> {
  // SAFETY: the value belongs to `env` and lives in the current handle scope,
  // which outlives the return of the native call that hands it back.
  unsafe { Unknown::from_raw_unchecked(env.raw(), value.raw()) }
}

/// An optional `Record<string, string>`.
pub fn string_record(env: &Env, value: &Unknown, path: &str) -> Result<Vec<(String, String)>> {
  if is_undefined(value) {
    return Ok(Vec::new());
  }
  let object = object(env, value, path)?;
  let mut out = Vec::new();
  for key in Object::keys(&object)? {
    let v = field(&object, &key)?;
    if v.get_type()? != ValueType::String {
      return Err(type_error(
        env,
        format!(
          "The \"{path}.{key}\" property must be of type string. {}",
          received(&v)
        ),
      ));
    }
    out.push((key, unsafe { v.cast::<String>() }?));
  }
  Ok(out)
}
