//
// Make an acronym of a phrase.
//

export const acronym = (phrase) => {
  throw new Error('Remove this line and implement the function');
};
