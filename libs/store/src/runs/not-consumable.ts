/**
 * Thrown inside a run's transaction when results it names cannot be consumed by it, to roll the
 * transaction back; caught by the same function and answered as `not_consumable`.
 */
export class NotConsumable extends Error {
  readonly attemptIds: readonly string[]

  constructor(attemptIds: readonly string[]) {
    super('results not consumable')
    this.attemptIds = attemptIds
  }
}
