package conversation

// taskWatchBuffer is how many states a watch holds for a slow reader. A start task saves one
// per step, and one per percent of a clone's progress; a state that arrives at a full watch
// makes room by dropping the oldest one held, so that the task is never held up and the
// reader always gets the latest state (READY or ERROR among them).
const taskWatchBuffer = 64

// TaskWatch receives a start task's states as they are saved. C is closed once the task's
// goroutine ends: after READY or ERROR, when the conversation is deleted, or when the
// service closes (a task cut short by a shutdown resumes in the next process, unwatched).
type TaskWatch struct {
	C  <-chan StartTask
	c  chan StartTask
	s  *Service
	id string
}

// Stop ends the watch; C is closed. Safe to call twice, and after C was closed.
func (w *TaskWatch) Stop() {
	w.s.watchMu.Lock()
	defer w.s.watchMu.Unlock()
	ws := w.s.watches[w.id]
	for i, x := range ws {
		if x == w {
			close(w.c)
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(w.s.watches, w.id)
	} else {
		w.s.watches[w.id] = ws
	}
}

// watchTask starts a watch of the start task's states.
func (s *Service) watchTask(taskID string) *TaskWatch {
	c := make(chan StartTask, taskWatchBuffer)
	w := &TaskWatch{C: c, c: c, s: s, id: taskID}
	s.watchMu.Lock()
	s.watches[taskID] = append(s.watches[taskID], w)
	s.watchMu.Unlock()
	return w
}

// notifyWatches hands a saved state to the task's watches.
func (s *Service) notifyWatches(t StartTask) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	for _, w := range s.watches[t.ID] {
		for {
			select {
			case w.c <- t:
			default:
				select {
				case <-w.c: // the oldest goes
				default:
				}
				continue
			}
			break
		}
	}
}

// endWatches closes the task's watches: its goroutine ended.
func (s *Service) endWatches(taskID string) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	for _, w := range s.watches[taskID] {
		close(w.c)
	}
	delete(s.watches, taskID)
}
