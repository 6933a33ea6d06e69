export const acronym = (phrase) =>
  phrase
    .split(/[\s-]+/)
    .map((word) => word.replace(/[^A-Za-z]/g, ''))
    .filter((word) => word.length > 0)
    .map((word) => word[0].toUpperCase())
    .join('');
