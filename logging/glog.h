// The project's one way to include glog. Include this header, never
// <glog/logging.h>, in every file that logs (logging/glog_include_test.sh
// checks it).
//
// Why: LibTorch 2.11's c10 is built without glog, so <c10/util/Logging.h>
// defines its own LOG, CHECK, DCHECK and VLOG macros. In a translation unit
// that sees both headers the one included last wins, silently: if c10's
// wins, LOG(INFO) goes to c10's logger, which drops INFO lines and ignores
// glog's sinks and flags. This header includes c10's first and glog's
// after it, so glog's macros win; c10's header, guarded, changes nothing
// when a LibTorch header includes it again later.
#ifndef RECEIPT_PARITY_LOGGING_GLOG_H_
#define RECEIPT_PARITY_LOGGING_GLOG_H_

#include <c10/util/Logging.h>
#include <glog/logging.h>

#endif  // RECEIPT_PARITY_LOGGING_GLOG_H_
