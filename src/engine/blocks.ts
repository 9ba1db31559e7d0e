// Block device commands (albatross-semantics.md §7). Add, remove and the old inline forms are
// short transactions inside the engine's queue; set [7] and dump [6] hold the device "in use"
// through a short transaction, stream outside the queue, and free it in another, so a slow
// client never holds the single writer.

import { type Name, printName } from '../resources/name.js';
import * as T from '../resources/tree.js';
import type { BlockCommand, Data } from '../wire/types.js';
import type { EngineContext } from './context.js';
import {
  blockInUse,
  blockNotFound,
  type EngineResponse,
  failure,
  invalidLevel,
  reply,
  TEXT,
  text,
} from './replies.js';

/** Block commands set the tree only in tasks they queue with `serial`. */
export type BlockContext = Pick<EngineContext, 'host' | 'log' | 'tree' | 'setTree' | 'serial'>;

async function* once(data: Uint8Array): AsyncGenerator<Uint8Array> {
  yield data;
}

export class BlockCommands {
  readonly #ctx: BlockContext;

  constructor(ctx: BlockContext) {
    this.#ctx = ctx;
  }

  /** Handles the block commands that run whole inside the queue. */
  async handle(
    name: Name,
    command: Exclude<BlockCommand, { type: 'block-set' | 'block-dump' }>,
  ): Promise<EngineResponse> {
    const ctx = this.#ctx;
    switch (command.type) {
      case 'block-info': {
        const entries =
          name.label === null
            ? T.foldBlocks(ctx.tree(), name.path).map(([n, b]) => ({
                name: n,
                size: b.size,
                active: b.inUse,
              }))
            : [T.findBlock(ctx.tree(), name)].flatMap((b) =>
                b === undefined ? [] : [{ name, size: b.size, active: b.inUse }],
              );
        return reply({ type: 'block-devices', entries });
      }
      case 'block-add':
        return this.#add(name, command.size, null, false);
      case 'block-add-old':
        return this.#add(name, command.size, command.data, command.compressed);
      case 'block-remove':
        return this.#remove(name);
      case 'block-set-old':
        return this.#setInline(name, command.data, command.compressed);
      case 'block-dump-old':
        return this.#dumpInline(name, command.level);
    }
  }

  async #add(
    name: Name,
    size: number,
    data: Uint8Array | null,
    compressed: boolean,
  ): Promise<EngineResponse> {
    const ctx = this.#ctx;
    const planned = T.addBlock(ctx.tree(), name, size);
    if (!planned.ok) return failure(planned.error.message);
    const created = await ctx.host.createBlock(name, size);
    if (!created.ok) return failure(created.error.message);
    if (data !== null && data.length > 0) {
      const written = await ctx.host.writeBlockData(
        name,
        size,
        once(data),
        compressed,
        TEXT.blockDataTooLarge,
      );
      if (!written.ok) {
        await created.value.undo();
        return failure(written.error.message);
      }
    }
    ctx.setTree(planned.value);
    return text(TEXT.blockAdded);
  }

  async #remove(name: Name): Promise<EngineResponse> {
    const ctx = this.#ctx;
    const planned = T.removeBlock(ctx.tree(), name);
    if (!planned.ok) return failure(planned.error.message);
    const removed = await ctx.host.removeBlock(name);
    if (!removed.ok) return failure(removed.error.message);
    ctx.setTree(planned.value);
    await removed.value
      .commit?.()
      .catch((e: unknown) =>
        ctx.log.error({ name: printName(name), problem: String(e) }, 'block file delete failed'),
      );
    return text(TEXT.blockRemoved);
  }

  /** The device must exist and be free; returns its size or the reply that refuses. */
  #free(name: Name, verb: 'set' | 'dump'): { size: number } | EngineResponse {
    const device = T.findBlock(this.#ctx.tree(), name);
    if (device === undefined) return failure(blockNotFound(verb));
    if (device.inUse) return failure(blockInUse(verb));
    return { size: device.size };
  }

  async #setInline(name: Name, data: Uint8Array, compressed: boolean): Promise<EngineResponse> {
    const free = this.#free(name, 'set');
    if ('kind' in free) return free;
    const written = await this.#ctx.host.writeBlockData(
      name,
      free.size,
      once(data),
      compressed,
      TEXT.blockDataTooLarge,
    );
    return written.ok ? text(TEXT.blockSet) : failure(written.error.message);
  }

  async #dumpInline(name: Name, level: number): Promise<EngineResponse> {
    if (!Number.isInteger(level) || level < 0 || level > 9) return failure(invalidLevel(level));
    const free = this.#free(name, 'dump');
    if ('kind' in free) return free;
    const pieces: Uint8Array[] = [];
    try {
      for await (const piece of this.#ctx.host.readBlockData(name, level)) pieces.push(piece);
    } catch {
      return failure(TEXT.blockStreamFailed);
    }
    return reply({ type: 'block-image-old', compressed: level !== 0, image: Buffer.concat(pieces) });
  }

  /** Takes the device for a stream (a short transaction); null = it is now held. */
  #hold(name: Name, verb: 'set' | 'dump'): Promise<{ size: number } | EngineResponse> {
    return this.#ctx.serial(async () => {
      const free = this.#free(name, verb);
      if ('kind' in free) return free;
      const held = T.setBlockInUse(this.#ctx.tree(), name, true);
      if (!held.ok) return failure(held.error.message);
      this.#ctx.setTree(held.value);
      return free;
    });
  }

  #letGo(name: Name): Promise<void> {
    return this.#ctx.serial(async () => {
      const freed = T.setBlockInUse(this.#ctx.tree(), name, false);
      if (freed.ok) this.#ctx.setTree(freed.value);
    });
  }

  /** Block set [7]: the raw chunks replace the content; the reply comes after the stream. */
  async set(
    name: Name,
    compressed: boolean,
    input: AsyncIterable<Uint8Array> | undefined,
  ): Promise<EngineResponse> {
    const held = await this.#hold(name, 'set');
    if ('kind' in held) return held;
    try {
      const written = await this.#ctx.host.writeBlockData(
        name,
        held.size,
        input ?? once(new Uint8Array(0)),
        compressed,
      );
      return written.ok ? text(TEXT.blockSet) : failure(written.error.message);
    } finally {
      await this.#letGo(name);
    }
  }

  /** Block dump [6]: Success [10], then Data block frames, then no-data (semantics §7). */
  async dump(name: Name, level: number): Promise<EngineResponse> {
    if (!Number.isInteger(level) || level < 0 || level > 9) return failure(invalidLevel(level));
    const held = await this.#hold(name, 'dump');
    if ('kind' in held) return held;
    const { host } = this.#ctx;
    const letGo = () => this.#letGo(name);
    async function* data(): AsyncGenerator<Data> {
      try {
        for await (const piece of host.readBlockData(name, level)) yield { type: 'block', data: piece };
        yield { type: 'block', data: null };
      } finally {
        await letGo();
      }
    }
    return { kind: 'stream', reply: { type: 'block-device-image', compressed: level !== 0 }, data: data() };
  }
}
