package riverbridge

import "errors"

// ErrInvalidConfig is wrapped by the errors of Handler and Job for a Config
// or Job they refuse.
var ErrInvalidConfig = errors.New("riverbridge: invalid configuration")

// ErrSlotMismatch is wrapped by a run's error when the args ArgsFunc built
// do not carry the run's Slot (its Key differs): their unique key would
// not be the slot's, so the run inserts nothing and fails.
var ErrSlotMismatch = errors.New("riverbridge: the job args do not carry the run's slot")
