//! Argument checking shared by every binding: wrong types become `TypeError`,
//! values out of range become `RangeError`, each naming the argument or field.

use napi::bindgen_prelude::*;
use napi::sys;

pub use crate::core::process::env_name_problem;
pub use crate::core::text::{js_number, property_path, quoted};

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

/// Throws a JavaScript `RangeError` for a value of the right type that cannot be
/// used (a NUL byte, an empty id, …), with Node's `ERR_INVALID_ARG_VALUE` code
/// (Node registers that code for both `TypeError` and `RangeError`).
pub fn value_error(env: &Env, message: String) -> Error {
  let _ = env.throw_range_error(&message, Some("ERR_INVALID_ARG_VALUE"));
  Error::new(Status::PendingException, message)
}

/// Throws a JavaScript `SyntaxError` (an invalid regex) and returns the error that tells
/// napi-rs it is pending. N-API has no `napi_throw_syntax_error` before version 9, so it is made
/// with the global `SyntaxError` constructor (a plain `Error` if that fails).
pub fn syntax_error(env: &Env, message: String) -> Error {
  let thrown = env.get_global().and_then(|global| {
    let constructor: Function<String, Unknown> = global.get_named_property("SyntaxError")?;
    env.throw(constructor.new_instance(message.clone())?)
  });
  if thrown.is_err() {
    let _ = env.throw_error(&message, None);
  }
  Error::new(Status::PendingException, message)
}

/// A NUL byte cannot cross into the OS (paths, argv, the environment): a
/// `RangeError` naming the field, as Node's `child_process` refuses it.
pub fn no_nul(env: &Env, value: &str, path: &str) -> Result<()> {
  if value.contains('\0') {
    return Err(value_error(
      env,
      format!(
        "The \"{path}\" property must be a string without null bytes. Received {}",
        quoted(value)
      ),
    ));
  }
  Ok(())
}

/// A path the OS will get: free of NUL bytes (a `RangeError`) and absolute (a `TypeError`), each
/// naming `path`.
pub fn absolute_path(env: &Env, value: String, path: &str) -> Result<std::path::PathBuf> {
  no_nul(env, &value, path)?;
  if !std::path::Path::new(&value).is_absolute() {
    let message = format!(
      "The \"{path}\" property must be an absolute path. Received {}",
      quoted(&value)
    );
    return Err(type_error(env, message));
  }
  Ok(value.into())
}

/// How a received value is described in error messages, in Node's style.
pub fn received(value: &Unknown) -> String {
  match value.get_type() {
    Ok(ValueType::Undefined) => "Received undefined".to_owned(),
    Ok(ValueType::Null) => "Received null".to_owned(),
    Ok(ValueType::Number) => match unsafe { value.cast::<f64>() } {
      Ok(n) => format!("Received type number ({})", js_number(n)),
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

/// An options object read field by field: every error names the field's path, `<base>.<key>`
/// (`options.maxEvents`, `options.limits.cpuPercent`). Each option bag of the API is read through
/// one, in one place.
#[derive(Clone, Copy)]
pub struct Bag<'a, 'env> {
  pub env: &'a Env,
  object: Object<'env>,
  base: &'a str,
}

impl<'a, 'env> Bag<'a, 'env> {
  pub fn new(env: &'a Env, object: &Object<'env>, base: &'a str) -> Self {
    Self {
      env,
      object: *object,
      base,
    }
  }

  /// `<base>.<key>` ([`property_path`]).
  pub fn path(&self, key: &str) -> String {
    property_path(self.base, key)
  }

  /// The property as it is (`undefined` when absent).
  pub fn get(&self, key: &str) -> Result<Unknown<'env>> {
    field(&self.object, key)
  }

  /// A required string.
  pub fn string(&self, key: &str) -> Result<String> {
    string(self.env, &self.get(key)?, &self.path(key))
  }

  /// An optional string: absent or `undefined` gives `None`.
  pub fn opt_string(&self, key: &str) -> Result<Option<String>> {
    optional_string_field(self.env, &self.object, key, &self.path(key))
  }

  /// An optional boolean.
  pub fn opt_bool(&self, key: &str) -> Result<Option<bool>> {
    optional_bool_field(self.env, &self.object, key, &self.path(key))
  }

  /// An optional integer in `min..=max` (a `TypeError`, or a `RangeError`; never clamped).
  pub fn opt_int(&self, key: &str, min: f64, max: f64) -> Result<Option<f64>> {
    optional_integer_field(self.env, &self.object, key, &self.path(key), min, max)
  }

  /// [`Self::opt_int`] as a `u64` (bounds up to `Number.MAX_SAFE_INTEGER`).
  pub fn opt_u64(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>> {
    Ok(self.opt_int(key, min as f64, max as f64)?.map(|n| n as u64))
  }

  /// [`Self::opt_int`] as a `u32`.
  pub fn opt_u32(&self, key: &str, min: u32, max: u32) -> Result<Option<u32>> {
    Ok(
      self
        .opt_int(key, f64::from(min), f64::from(max))?
        .map(|n| n as u32),
    )
  }

  /// An optional regular expression (a `SyntaxError` quoting the parser).
  pub fn opt_regex(&self, key: &str) -> Result<Option<crate::core::wait::Regex>> {
    optional_regex_field(self.env, &self.object, key, &self.path(key))
  }
}

/// An optional string property: absent or `undefined` gives `None`.
fn optional_string_field(env: &Env, obj: &Object, key: &str, path: &str) -> Result<Option<String>> {
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
fn optional_integer_field(
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

/// `registration.pid` of either registry's `register()`: absent (`undefined`, `null`) or an
/// integer `0..=4294967295`; anything else is a `TypeError`/`RangeError` naming the field.
pub fn optional_pid_field(env: &Env, obj: &Object, path: &str) -> Result<Option<u32>> {
  let value = field(obj, "pid")?;
  match value.get_type()? {
    ValueType::Undefined | ValueType::Null => Ok(None),
    _ => Ok(Some(
      integer_in_range(env, &value, path, "property", 0.0, u32::MAX as f64)? as u32,
    )),
  }
}

/// A value that must be a number (any number: the caller checks its range).
fn number(env: &Env, value: &Unknown, path: &str, what: &str) -> Result<f64> {
  if value.get_type()? != ValueType::Number {
    return Err(type_error(
      env,
      format!(
        "The \"{path}\" {what} must be of type number. {}",
        received(value)
      ),
    ));
  }
  unsafe { value.cast::<f64>() }
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
  let n = number(env, value, path, what)?;
  if !n.is_finite() || n.fract() != 0.0 || n < min || n > max {
    let range = if max.is_finite() {
      format!(">= {min} && <= {max}")
    } else {
      format!(">= {min}")
    };
    return Err(range_error(
      env,
      format!(
        "The value of \"{path}\" is out of range. It must be an integer {range}. Received {}",
        js_number(n)
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
    // By a JavaScript string key: a key may hold a NUL, which no C string can.
    let v: Unknown = object.get_property_unchecked(env.create_string(&key)?)?;
    if v.get_type()? != ValueType::String {
      return Err(type_error(
        env,
        format!(
          "The \"{}\" property must be of type string. {}",
          property_path(path, &key),
          received(&v)
        ),
      ));
    }
    out.push((key, unsafe { v.cast::<String>() }?));
  }
  Ok(out)
}

/// An optional environment `Record<string, string>` for a child process: every
/// name usable as a variable name (non-empty, no `=`, no NUL) and every value
/// free of NUL. A bad name or value is a `RangeError` naming it
/// (`options.env["A=B"]`), thrown before anything starts.
pub fn env_record(env: &Env, value: &Unknown, path: &str) -> Result<Vec<(String, String)>> {
  let vars = string_record(env, value, path)?;
  for (key, val) in &vars {
    let at = property_path(path, key);
    if let Some(problem) = env_name_problem(key) {
      return Err(value_error(
        env,
        format!(
          "The \"{at}\" property name {problem}: it is not a valid environment variable name"
        ),
      ));
    }
    no_nul(env, val, &at)?;
  }
  Ok(vars)
}

/// The largest time value a JavaScript `Date` holds (ECMA-262 TimeClip).
pub const MAX_TIME_MS: f64 = 8.64e15;

/// `Number.MAX_SAFE_INTEGER`: above it a count is no longer exact in JavaScript.
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// A time in epoch milliseconds: a finite number within `0..=8.64e15` (the
/// range of a JavaScript `Date` from 1970 on; fractions allowed, as `Date`
/// takes them). Wrong type: `TypeError`; NaN, infinities, negative or beyond:
/// `RangeError`. An unusable time cannot be stored (the status sidecar could
/// not even be written with it).
pub fn time_ms(env: &Env, value: &Unknown, path: &str, what: &str) -> Result<f64> {
  let n = number(env, value, path, what)?;
  if !(0.0..=MAX_TIME_MS).contains(&n) {
    return Err(range_error(
      env,
      format!(
        "The value of \"{path}\" is out of range. It must be >= 0 && <= {MAX_TIME_MS}. Received {}",
        js_number(n)
      ),
    ));
  }
  Ok(n)
}

/// `undefined`, to hand back to JavaScript (napi-rs turns `None` into `null`).
pub fn undefined(env: &Env) -> Result<Unknown<'static>> {
  // SAFETY: a primitive created in this call's handle scope, returned from it.
  unsafe {
    let raw = <() as ToNapiValue>::to_napi_value(env.raw(), ())?;
    Ok(Unknown::from_raw_unchecked(env.raw(), raw))
  }
}

/// The `new.target` check of a class constructor. napi-rs runs a
/// `#[napi(constructor)]` for a plain call too, wrapping whatever `this` is
/// (the global object, any object) and handing back an object without the
/// class's methods. napi-rs passes the constructor neither `new.target` nor
/// its callback info, so `this` is checked instead: `new C()` (and `new` of a
/// subclass) gives a fresh, not yet wrapped object whose prototype chain holds
/// `C.prototype` (napi-rs's own `instanceof` check, `ValidateNapiValue`).
/// Anything else throws V8's own `TypeError` for a class called without
/// `new`, before the constructor does any work. napi-rs's factories
/// (`into_instance`) never reach the constructor body, so they are unaffected.
pub fn require_new<T: ValidateNapiValue>(env: &Env, this: &Unknown, class: &str) -> Result<()> {
  // SAFETY: `this` is a live value of this env; validate only reads it.
  let instance = this.get_type()? == ValueType::Object
    && unsafe { T::validate(env.raw(), this.raw()) }.is_ok()
    && !is_wrapped(env, this);
  if instance {
    return Ok(());
  }
  let message = format!("Class constructor {class} cannot be invoked without 'new'");
  let _ = env.throw_type_error(&message, None);
  Err(Error::new(Status::PendingException, message))
}

/// True when a native object is already attached to `value` (`napi_wrap`).
fn is_wrapped(env: &Env, value: &Unknown) -> bool {
  let mut native = std::ptr::null_mut();
  // SAFETY: `value` is a live object of this env; napi_unwrap only reads it.
  let status = unsafe { napi::sys::napi_unwrap(env.raw(), value.raw(), &mut native) };
  status == napi::sys::Status::napi_ok
}

/// An optional string property compiled as a Rust `regex` (linear time); a
/// pattern that does not compile is a `SyntaxError` quoting the parser.
fn optional_regex_field(
  env: &Env,
  obj: &Object,
  key: &str,
  path: &str,
) -> Result<Option<crate::core::wait::Regex>> {
  let Some(pattern) = optional_string_field(env, obj, key, path)? else {
    return Ok(None);
  };
  crate::core::wait::compile_match(&pattern)
    .map(Some)
    .map_err(|error| {
      syntax_error(
        env,
        format!("The \"{path}\" property is not a valid regular expression: {error}"),
      )
    })
}

/// `timeoutMs` (API.md §6.8): an optional integer 1..2147483647 (ms); refused with `persist`
/// (the deadline is kept by the host, and a persisted task outlives it).
pub fn parse_timeout_ms(bag: &Bag, persisted: bool) -> Result<Option<u64>> {
  let timeout = bag.opt_u64("timeoutMs", 1, i32::MAX as u64)?;
  if timeout.is_some() && persisted {
    return Err(type_error(
      bag.env,
      "The \"options.timeoutMs\" option cannot be used with \"options.persist\": a persisted task outlives the host that keeps the deadline".into(),
    ));
  }
  Ok(timeout)
}

/// `limits` (API.md §6.8): `{ memoryBytes?, cpuPercent?, maxProcesses? }`, each an integer in
/// its range; refused with `persist`. Limits this host cannot enforce are an `Error` saying why
/// (`process::check_limits`), before anything starts. An empty object is no limit.
pub fn parse_limits(bag: &Bag, persisted: bool) -> Result<Option<crate::core::process::Limits>> {
  use crate::core::process::Limits;
  let env = bag.env;
  let value = bag.get("limits")?;
  if is_undefined(&value) {
    return Ok(None);
  }
  if value.get_type()? != ValueType::Object || value.is_array()? {
    return Err(type_error(
      env,
      format!(
        "The \"options.limits\" property must be of type object. {}",
        received(&value)
      ),
    ));
  }
  let path = bag.path("limits");
  let limits_bag = Bag::new(env, &unsafe { value.cast::<Object>() }?, &path);
  let limits = Limits {
    memory_bytes: limits_bag.opt_u64(
      "memoryBytes",
      Limits::MIN_MEMORY_BYTES,
      Limits::MAX_MEMORY_BYTES,
    )?,
    cpu_percent: limits_bag.opt_u32("cpuPercent", 1, Limits::MAX_CPU_PERCENT)?,
    max_processes: limits_bag.opt_u32("maxProcesses", 1, Limits::MAX_PROCESSES)?,
  };
  if limits.is_empty() {
    return Ok(None);
  }
  if persisted {
    return Err(type_error(
      env,
      "The \"options.limits\" option cannot be used with \"options.persist\": a persisted task's keeper does not carry limits yet".into(),
    ));
  }
  if let Err(why) = crate::core::process::check_limits(&limits) {
    return Err(Error::new(Status::GenericFailure, why));
  }
  Ok(Some(limits))
}

/// An optional boolean property.
fn optional_bool_field(env: &Env, obj: &Object, key: &str, path: &str) -> Result<Option<bool>> {
  let value = field(obj, key)?;
  match value.get_type()? {
    ValueType::Undefined => Ok(None),
    ValueType::Boolean => Ok(Some(unsafe { value.cast::<bool>() }?)),
    _ => Err(type_error(
      env,
      format!(
        "The \"{path}\" property must be of type boolean. {}",
        received(&value)
      ),
    )),
  }
}

/// An optional `AbortSignal` (`undefined`: none): an object with `addEventListener` and a
/// boolean `aborted`; anything else is a `TypeError` naming `path`.
pub(crate) fn optional_abort_signal<'a>(
  env: &Env,
  value: &Unknown<'a>,
  path: &str,
) -> Result<Option<Object<'a>>> {
  if is_undefined(value) {
    return Ok(None);
  }
  let signal = object(env, value, path)?;
  let listens = signal
    .get_named_property::<Unknown>("addEventListener")?
    .get_type()?
    == ValueType::Function;
  let aborted = signal
    .get_named_property::<Unknown>("aborted")?
    .get_type()?
    == ValueType::Boolean;
  if !(listens && aborted) {
    let message = format!("The \"{path}\" property must be an instance of AbortSignal");
    return Err(type_error(env, message));
  }
  Ok(Some(signal))
}

/// A list of strings: a `TypeError` naming `path` for anything else.
pub(crate) fn string_list(env: &Env, value: &Unknown, path: &str) -> Result<Vec<String>> {
  let type_error = || {
    type_error(
      env,
      format!(
        "The \"{path}\" property must be an array of strings. {}",
        received(value)
      ),
    )
  };
  if value.get_type()? != ValueType::Object || !value.is_array()? {
    return Err(type_error());
  }
  let array = unsafe { value.cast::<Array>() }?;
  let mut out = Vec::with_capacity(array.len() as usize);
  for i in 0..array.len() {
    let item = array.get::<Unknown>(i)?;
    match item {
      Some(item) if item.get_type()? == ValueType::String => {
        out.push(unsafe { item.cast::<String>() }?)
      }
      _ => return Err(type_error()),
    }
  }
  Ok(out)
}

/// An `exitCode` argument: an integer in the range of an `i32`.
pub fn exit_code(env: &Env, value: &Unknown) -> Result<i32> {
  let (min, max) = (i32::MIN as f64, i32::MAX as f64);
  integer_in_range(env, value, "exitCode", "argument", min, max).map(|n| n as i32)
}

/// `exitCode: number | null` (`undefined` counts as `null`): `None` for no code.
pub fn nullable_exit_code(env: &Env, value: &Unknown) -> Result<Option<i32>> {
  match value.get_type()? {
    ValueType::Null | ValueType::Undefined => Ok(None),
    ValueType::Number => exit_code(env, value).map(Some),
    _ => Err(type_error(
      env,
      format!(
        "The \"exitCode\" argument must be a number or null. {}",
        received(value)
      ),
    )),
  }
}
