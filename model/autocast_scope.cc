#include "model/autocast_scope.h"

#include <ATen/autocast_mode.h>

namespace receipt_parity {

AutocastScope::AutocastScope(c10::DeviceType device_type, bool enabled)
    : device_type_(device_type), enabled_(enabled) {
  if (!enabled_) return;
  was_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  previous_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  at::autocast::set_autocast_dtype(device_type_, at::kBFloat16);
  at::autocast::set_autocast_enabled(device_type_, true);
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  at::autocast::set_autocast_enabled(device_type_, was_enabled_);
  at::autocast::set_autocast_dtype(device_type_, previous_dtype_);
  at::autocast::clear_cache();
}

}  // namespace receipt_parity
