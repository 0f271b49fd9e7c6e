/**
 * Float32Arrays for decoded event vectors, cut from shared 64 KB buffers. A Float32Array of its own
 * per vector (128 values: 512 bytes) is an ArrayBuffer outside V8's heap that the garbage collector
 * tracks and frees one by one, for vectors that live only until their batch is written (the store
 * and the vector DB copy them). A buffer is freed once no vector cut from it is referenced.
 */
const SLAB_VALUES = 16_384;

export class VectorSlab {
  #slab = new Float32Array(0);
  #used = 0;

  /** A zeroed vector of `length` values. */
  take(length: number): Float32Array {
    if (length > SLAB_VALUES / 4) return new Float32Array(length);
    if (this.#used + length > this.#slab.length) {
      this.#slab = new Float32Array(SLAB_VALUES);
      this.#used = 0;
    }
    const vector = this.#slab.subarray(this.#used, this.#used + length);
    this.#used += length;
    return vector;
  }

  /** Gives back the last vector taken (a vector refused while being filled), zeroed again. */
  giveBack(vector: Float32Array): void {
    if (vector.buffer !== this.#slab.buffer) return;
    if (vector.byteOffset / 4 + vector.length !== this.#used) return;
    vector.fill(0);
    this.#used -= vector.length;
  }
}
