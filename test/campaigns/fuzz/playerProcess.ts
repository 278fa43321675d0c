// The fuzz player's own process (forked by remotePlayer.ts): plays each lane's case from its seed, so a stalled host
// event loop in the campaign's process never stalls the runner side, and the other way round.
import { makeCase } from './cases.js';
import { FuzzPlayer } from './player.js';
import type { PlayerReply, PlayerRequest } from './remotePlayer.js';

const players = new Map<string, FuzzPlayer>();
const send = (reply: PlayerReply) => process.send!(reply);

process.on('message', (request: PlayerRequest) => {
  let player = players.get(request.socketPath);
  if (!player) players.set(request.socketPath, (player = new FuzzPlayer(request.socketPath)));
  if (request.op === 'arm') {
    void player.arm(makeCase(request.seed)).then(() => send({ op: 'armed', socketPath: request.socketPath }));
  } else {
    void player.collect().then((log) => send({ op: 'log', socketPath: request.socketPath, log }));
  }
});
// The campaign went away: nothing left to play for.
process.on('disconnect', () => process.exit(0));
