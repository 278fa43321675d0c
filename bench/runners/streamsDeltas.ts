// The runner lives in its runner folder (a runner build reads only its own folder); this entry runs it directly.
import '../runnerDirs/streams-deltas/index.js';
