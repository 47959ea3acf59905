package cronfence

import "testing"

// A timer entry's job is current while the set holds that very job; once
// it left (removed, or replaced by an edit or a declared job of its name)
// the set decides: an edit of the same stored schedule carries a slot
// fired again over, anything else drops the entry.
func TestJobSetCurrent(t *testing.T) {
	storedAs := func(name string, id int64) *registered {
		return &registered{Job: Job{Name: name}, stored: &storedJob{id: id}}
	}
	declared := func(name string) *registered { return &registered{Job: Job{Name: name}} }

	var js jobSet
	d := declared("d")
	if _, err := js.add(d, false); err != nil {
		t.Fatal(err)
	}
	s1 := storedAs("s", 1)
	js.putStored(s1)
	for _, again := range []bool{false, true} {
		if got := js.current(d, again); got != d {
			t.Errorf("declared job, again=%v: current %p, want itself", again, got)
		}
		if got := js.current(s1, again); got != s1 {
			t.Errorf("stored job, again=%v: current %p, want itself", again, got)
		}
	}

	// An edit puts a new job in the old one's place.
	s1edit := storedAs("s", 1)
	js.putStored(s1edit)
	if got := js.current(s1, false); got != nil {
		t.Errorf("edited schedule's old entry: current %p, want nil (re-armed)", got)
	}
	if got := js.current(s1, true); got != s1edit {
		t.Errorf("edited schedule's slot fired again: current %p, want the edit %p", got, s1edit)
	}
	if got := js.current(s1edit, false); got != s1edit {
		t.Errorf("the edit: current %p, want itself", got)
	}

	// Deleted and created again under its name: another schedule.
	if js.removeStored("s", 1) != s1edit {
		t.Fatal("removeStored did not return the edit")
	}
	if got := js.current(s1edit, true); got != nil {
		t.Errorf("deleted schedule: current %p, want nil", got)
	}
	s2 := storedAs("s", 2)
	js.putStored(s2)
	if got := js.current(s1edit, true); got != nil {
		t.Errorf("deleted schedule, its name taken by another: current %p, want nil", got)
	}

	// A declared job shadows the stored schedule of its name.
	shadow := declared("s")
	if _, err := js.add(shadow, true); err != nil {
		t.Fatal(err)
	}
	if got := js.current(s2, true); got != nil {
		t.Errorf("shadowed schedule: current %p, want nil", got)
	}
	if got := js.current(shadow, false); got != shadow {
		t.Errorf("the declared job: current %p, want itself", got)
	}

	// A job put back after it left is current again.
	s3 := storedAs("t", 3)
	js.putStored(s3)
	js.removeStored("t", 3)
	js.putStored(s3)
	if got := js.current(s3, false); got != s3 {
		t.Errorf("a schedule put back: current %p, want itself", got)
	}
}
