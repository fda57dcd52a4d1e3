package conversation

import (
	"fmt"
	"testing"
)

// TestTaskWatchKeepsTheLatest: a watch nobody reads never holds the task up; once full it
// drops its oldest states, so that the reader still gets the last one, then the close.
func TestTaskWatchKeepsTheLatest(t *testing.T) {
	s := &Service{watches: map[string][]*TaskWatch{}}
	w := s.watchTask("task")
	other := s.watchTask("task")
	other.Stop()
	other.Stop() // twice is safe
	n := 3 * taskWatchBuffer
	for i := range n {
		s.notifyWatches(StartTask{ID: "task", Status: TaskPreparingRepository, Detail: fmt.Sprint(i)})
	}
	s.notifyWatches(StartTask{ID: "task", Status: TaskReady})
	s.endWatches("task")
	var got []StartTask
	for st := range w.C {
		got = append(got, st)
	}
	if len(got) != taskWatchBuffer || got[len(got)-1].Status != TaskReady {
		t.Fatalf("%d states, the last %+v; want %d ending READY", len(got), got[len(got)-1], taskWatchBuffer)
	}
	if first := got[0].Detail; first != fmt.Sprint(n-taskWatchBuffer+1) {
		t.Errorf("the oldest state kept is %s, want the latest ones", first)
	}
	if _, open := <-other.C; open {
		t.Error("a stopped watch is open")
	}
	w.Stop() // after the close: nothing happens
}
