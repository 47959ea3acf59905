package postgres

import (
	"context"
	"errors"

	"github.com/cronfence/cronfence/store"
)

// TODO(i39): replaced by the stored schedules' implementation.

func (s *Store) ScheduleCreate(context.Context, store.ScheduleCreateParams) (store.Schedule, error) {
	return store.Schedule{}, errors.ErrUnsupported
}
func (s *Store) ScheduleUpdate(context.Context, store.ScheduleUpdateParams) (store.Schedule, error) {
	return store.Schedule{}, errors.ErrUnsupported
}
func (s *Store) ScheduleDelete(context.Context, store.ScheduleDeleteParams) (store.Schedule, error) {
	return store.Schedule{}, errors.ErrUnsupported
}
func (s *Store) ScheduleGet(context.Context, string) (store.Schedule, error) {
	return store.Schedule{}, errors.ErrUnsupported
}
func (s *Store) ScheduleList(context.Context, store.ScheduleListParams) ([]store.Schedule, error) {
	return nil, errors.ErrUnsupported
}
func (s *Store) ScheduleChanges(context.Context, store.ScheduleChangesParams) (store.ScheduleChanges, error) {
	return store.ScheduleChanges{}, errors.ErrUnsupported
}
func (s *Store) ScheduleAudit(context.Context, store.ScheduleAuditParams) ([]store.ScheduleChange, error) {
	return nil, errors.ErrUnsupported
}
