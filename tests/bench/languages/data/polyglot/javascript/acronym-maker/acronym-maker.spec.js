import { acronym } from './acronym-maker';

describe('acronym', () => {
  test('an empty phrase has an empty acronym', () => {
    expect(acronym('')).toEqual('');
  });

  xtest('one word gives its first letter', () => {
    expect(acronym('Portable')).toEqual('P');
  });

  xtest('several words give one letter each', () => {
    expect(acronym('Portable Network Graphics')).toEqual('PNG');
  });

  xtest('lower-case words give upper-case letters', () => {
    expect(acronym('ruby on rails')).toEqual('ROR');
  });

  xtest('a hyphen separates words', () => {
    expect(acronym('Complementary metal-oxide semiconductor')).toEqual('CMOS');
  });

  xtest('punctuation is not a letter', () => {
    expect(acronym('The Road _Not_ Taken')).toEqual('TRNT');
  });

  test.skip('a phrase of a million words', () => {
    expect(acronym('word '.repeat(1000000))).toHaveLength(1000000);
  });
});
