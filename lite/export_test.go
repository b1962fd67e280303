package lite

// SetIdleHook lets tests know when a worker's loop has gone to sleep.
func SetIdleHook(w *Worker, hook func()) { w.idleHook = hook }
