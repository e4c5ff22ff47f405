/** The value of `--name=value` among the command's arguments; undefined when it is not given. */
export function optionValue(name: string, argv: readonly string[] = process.argv): string | undefined {
  return argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** The number given as `--name=value`, or `fallback` when it is not given. */
export function numberOption(name: string, fallback: number, argv: readonly string[] = process.argv): number {
  const value = optionValue(name, argv);
  return value === undefined ? fallback : Number(value);
}
