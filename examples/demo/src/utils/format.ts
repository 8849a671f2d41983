export function formatDate(d: Date): string {
  return d.toISOString().slice(0, 10);
}

export function formatMoney(cents: number, currency = "USD"): string {
  return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(cents / 100);
}
