import '../../runners/streamer.js';
