import { readFileSync } from 'node:fs';

/** The loop device mounted on `point` (`/dev/loopN`), from the kernel's mount table. */
export function loopDeviceOf(point: string): string | undefined {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const fields = line.split(' ');
    if (fields[4]?.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))) !== point) continue;
    const source = fields[fields.indexOf('-') + 2];
    if (source && /^\/dev\/loop\d+$/.test(source)) return source;
  }
  return undefined;
}

/** Whether `point` is mounted from a loop device whose backing file is `image` (both real paths). */
export function mountedFrom(point: string, image: string): boolean {
  const device = loopDeviceOf(point);
  if (!device) return false;
  try {
    return readFileSync(`/sys/block/${device.slice('/dev/'.length)}/loop/backing_file`, 'utf8').trim() === image;
  } catch {
    return false; // detached meanwhile
  }
}

const DETACH_WAIT_MS = 10_000;

/** Whether a mount of this host (another run of the same session) still uses `device`. */
function stillMounted(device: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => {
      const fields = line.split(' ');
      return fields[fields.indexOf('-') + 2] === device;
    });
}

/**
 * Wait (bounded; never throws) until the loop device no longer serves `image`, so a run's end
 * means its filesystem is gone. It outlives our unmount while a dead bwrap sandbox's mount
 * namespace is still being torn down (the kernel drops those mounts from a work queue). Another
 * mount of the same image in this host (a concurrent run of the session shares the device and
 * its one superblock, as `mount` reuses the loop device of an attached file) is not waited for.
 */
export function waitDetached(device: string, image: string): void {
  if (stillMounted(device)) return;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + DETACH_WAIT_MS; detachPending(device, image, deadline);)
    Atomics.wait(pause, 0, 0, 5);
}

/** {@link waitDetached} polled on a timer: the event loop runs meanwhile. */
export async function waitDetachedAsync(device: string, image: string): Promise<void> {
  if (stillMounted(device)) return;
  for (const deadline = Date.now() + DETACH_WAIT_MS; detachPending(device, image, deadline);)
    await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Whether to look again: the device still serves `image` and the deadline has not passed. */
function detachPending(device: string, image: string, deadline: number): boolean {
  let current: string;
  try {
    current = readFileSync(`/sys/block/${device.slice('/dev/'.length)}/loop/backing_file`, 'utf8').trim();
  } catch {
    return false; // no backing file: detached
  }
  // Past the deadline the next host start's sweep finds nothing mounted; the kernel finishes alone.
  return current === image && Date.now() <= deadline;
}
