// The old name of collectives/collective_error.h, kept so that a team's
// reducer written against it still builds (its target is the alias
// //reducers:collective_error). New code includes the collectives/ header.
#ifndef RECEIPT_PARITY_REDUCERS_COLLECTIVE_ERROR_H_
#define RECEIPT_PARITY_REDUCERS_COLLECTIVE_ERROR_H_

#include "collectives/collective_error.h"  // IWYU pragma: export

#endif  // RECEIPT_PARITY_REDUCERS_COLLECTIVE_ERROR_H_
